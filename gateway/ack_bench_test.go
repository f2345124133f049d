package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
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
	h := newHarness(b)
	h.model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Content: "好的", Hook: func(ctx context.Context) error {
			select { // a model that thinks for 2 s
			case <-time.After(modelLatency):
			case <-ctx.Done():
			}
			return nil
		}}
	})
	h.start(gateway.Deps{})

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		u, body := h.callbackRequest(textXML(fmt.Sprintf("user%d", i%50), "我还有几天年假？", fmt.Sprintf("bench-%d", i)), time.Now())
		start := time.Now()
		status, _ := post(b, u, body)
		lat = append(lat, time.Since(start))
		if status != 200 {
			b.Fatalf("ack %d answered %d", i, status)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	if n := len(h.model.Requests()); n == 0 && b.N > 50 {
		b.Log("note: no model call started during the benchmark")
	}
}
