package feishu_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

// slowModel makes every model call take 2 s: acks must not wait for it.
func slowModel(h *e2e) {
	h.model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Slow("好的", 2*time.Second)
	})
}

// BenchmarkEventAck measures how long Feishu waits for our 200 to an
// encrypted, signed event (decrypt, verify, insert the message and its
// job, answer) while the workers are busy with a slow model.
//
//	go test -run '^$' -bench EventAck -benchtime 300x ./channels/feishu/
func BenchmarkEventAck(b *testing.B) {
	h := newE2E(b, feishu.ModeHTTP, "")
	slowModel(h)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		m := message(fmt.Sprintf("om_bench_%d", i), "p2p", "我还有几天年假？")
		m.OpenID, m.UserID = fmt.Sprintf("ou_u%d", i%50), fmt.Sprintf("u%d", i%50)
		plain := feishutest.EventJSON(m)
		start := time.Now()
		if status := h.post(b, plain); status != 200 {
			b.Fatalf("event %d answered %d", i, status)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	chantest.ReportPercentiles(b, lat, "ms")
}

// BenchmarkFrameAck measures the time from a pushed event frame to our ack
// on the long connection, under the same load.
//
//	go test -run '^$' -bench FrameAck -benchtime 300x ./channels/feishu/
func BenchmarkFrameAck(b *testing.B) {
	h := newE2E(b, feishu.ModeWebSocket, "")
	slowModel(h)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := h.api.WaitFor(ctx, func() bool { return h.api.Connections() == 1 }); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		m := message(fmt.Sprintf("om_bench_%d", i), "p2p", "我还有几天年假？")
		m.OpenID, m.UserID = fmt.Sprintf("ou_u%d", i%50), fmt.Sprintf("u%d", i%50)
		start := time.Now()
		if err := h.api.PushEvent(ctx, fmt.Sprintf("frame-%d", i), feishutest.EventJSON(m), 1); err != nil {
			b.Fatal(err)
		}
		if err := h.api.WaitFor(ctx, func() bool { return len(h.api.Acks()) == i+1 }); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	chantest.ReportPercentiles(b, lat, "ms")
}
