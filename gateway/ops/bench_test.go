package ops_test

import (
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/ops"
)

// BenchmarkAckObservability measures what metrics and tracing add to a
// WeCom callback's ack (verify, decrypt, store the message and its job,
// answer): latency percentiles, allocations per request, and the heap
// after the run. The gateway works no queue, so only the ack path runs.
// "metrics" records every metric, "tracing" a span per callback batched to an
// exporter that drops them (the export runs off the request path), "on" both.
//
//	go test -run '^$' -bench AckObservability -benchmem -benchtime 1500x -count 4 ./gateway/
func BenchmarkAckObservability(b *testing.B) {
	for _, mode := range []struct {
		name             string
		metrics, tracing bool
	}{{"off", false, false}, {"metrics", true, false}, {"tracing", false, true}, {"on", true, true}} {
		b.Run("observability="+mode.name, func(b *testing.B) {
			h := gatewaytest.New(b)
			deps := gateway.Deps{Queues: map[string]int{}, Partial: true}
			extra := "metrics:\n  enabled: false\n"
			if mode.metrics {
				extra = ""
			}
			if mode.tracing {
				tp := ops.NewTracerProvider(tracetest.NewNoopExporter())
				b.Cleanup(func() { _ = tp.Shutdown(b.Context()) })
				deps.Tracing = tp
			}
			h.StartExtra(extra, deps)
			// Warm up connections and code paths outside the measurement.
			for i := range 20 {
				u, body := h.CallbackRequest(gatewaytest.TextXML("warm", "你好", fmt.Sprintf("warm-%s-%d", mode.name, i)), time.Now())
				gatewaytest.Post(b, u, body)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				u, body := h.CallbackRequest(gatewaytest.TextXML(fmt.Sprintf("user%d", i%50), "我还有几天年假？", fmt.Sprintf("obs-%s-%d", mode.name, i)), time.Now())
				start := time.Now()
				if status, _ := gatewaytest.Post(b, u, body); status != http.StatusOK {
					b.Fatalf("ack %d answered %d", i, status)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			chantest.ReportPercentiles(b, lat, "ms")
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapInuse)/1024, "heap-KB")
		})
	}
}

// BenchmarkMetricsScrape measures one GET /metrics (every metric series
// after a few hundred callbacks, the queue-depth query included).
//
//	go test -run '^$' -bench MetricsScrape -benchmem ./gateway/
func BenchmarkMetricsScrape(b *testing.B) {
	h := gatewaytest.New(b)
	h.Start(gateway.Deps{Queues: map[string]int{}, Partial: true})
	for i := range 200 {
		u, body := h.CallbackRequest(gatewaytest.TextXML(fmt.Sprintf("user%d", i%50), "你好", fmt.Sprintf("scrape-%d", i)), time.Now())
		gatewaytest.Post(b, u, body)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		resp, err := http.Get(h.Srv.URL + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("/metrics: %d", resp.StatusCode)
		}
	}
}
