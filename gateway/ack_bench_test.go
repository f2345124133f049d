package gateway_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// modelLatency is how long the fake model takes per call in the ack
// benchmark: acks must not wait for it.
const modelLatency = 2 * time.Second

// BenchmarkCallbackAck measures how long WeCom waits for our 200 while the
// workers are busy with a slow (2 s) model: verify, decrypt, insert the
// inbound row and its job in one transaction, answer. Reports p50/p99.
//
//	go test -run '^$' -bench CallbackAck -benchtime 500x ./gateway/
func BenchmarkCallbackAck(b *testing.B) {
	h := gatewaytest.New(b)
	slowModel(h)
	h.Start(gateway.Deps{})

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		u, body := h.CallbackRequest(gatewaytest.TextXML(fmt.Sprintf("user%d", i%50), "我还有几天年假？", fmt.Sprintf("bench-%d", i)), time.Now())
		start := time.Now()
		status, _ := gatewaytest.Post(b, u, body)
		lat = append(lat, time.Since(start))
		if status != 200 {
			b.Fatalf("ack %d answered %d", i, status)
		}
	}
	b.StopTimer()
	chantest.ReportPercentiles(b, lat, "ms")
	if n := len(h.Model.Requests()); n == 0 && b.N > 50 {
		b.Log("note: no model call started during the benchmark")
	}
}
