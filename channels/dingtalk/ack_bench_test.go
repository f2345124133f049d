package dingtalk_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// slowModel makes every model call take 2 s: acks must not wait for it.
func slowModel(h *hermes) {
	h.model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Slow("好的", 2*time.Second)
	})
}

// benchMessage is the i-th message of a benchmark, from 50 users.
func benchMessage(i int) dingtalktest.Message {
	return dingtalktest.Message{MsgID: fmt.Sprintf("bench-%d", i), Text: "我还有几天年假？", ConversationID: fmt.Sprintf("cid-%d", i%50),
		StaffID: fmt.Sprintf("user%d", i%50), CorpID: corpID}
}

// BenchmarkHTTPAck measures how long DingTalk waits for our 200: verify
// the signature, decode, commit the message and its job, answer.
//
//	go test -run '^$' -bench HTTPAck -benchtime 300x ./channels/dingtalk/
func BenchmarkHTTPAck(b *testing.B) {
	h := start(b, "")
	slowModel(h)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		m := benchMessage(i)
		t0 := time.Now()
		if status := h.post(m, appSecret); status != http.StatusOK {
			b.Fatalf("ack %d answered %d", i, status)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	chantest.ReportPercentiles(b, lat, "ms")
}

// BenchmarkStreamAck measures the time from a pushed CALLBACK frame to our
// ack (which follows the commit), as the fake gateway sees it.
//
//	go test -run '^$' -bench StreamAck -benchtime 300x ./channels/dingtalk/
func BenchmarkStreamAck(b *testing.B) {
	h := start(b, "      mode: stream\n")
	slowModel(h)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := h.fake.WaitStream(ctx, func(_ []dingtalktest.Ack, _, live int) bool { return live == 1 }); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		m := benchMessage(i)
		t0 := time.Now()
		id, err := h.fake.PushCallback(ctx, m.JSON())
		if err != nil {
			b.Fatal(err)
		}
		if err := h.fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool {
			return len(acks) > 0 && acks[len(acks)-1].MessageID == id
		}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	chantest.ReportPercentiles(b, lat, "ms")
}
