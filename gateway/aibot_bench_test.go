package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// slowModel makes every model call take modelLatency: acks must not wait
// for it.
func slowModel(h *gatewaytest.Harness) {
	h.Model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Slow("好的", modelLatency)
	})
}

// BenchmarkAIBotCallbackAck measures how long WeCom waits for the answer
// to an AI bot message callback while the workers are busy with a slow
// (2 s) model: verify, decrypt, store the message and its job in one
// transaction, then answer with the encrypted stream-open reply.
//
//	go test -run '^$' -bench AIBotCallbackAck -benchtime 300x ./gateway/
func BenchmarkAIBotCallbackAck(b *testing.B) {
	h := gatewaytest.New(b)
	slowModel(h)
	h.StartExtra(callbackBotYAML(), gateway.Deps{})
	bot := newBotCaller(b, h, time.Now)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		msg := wecomtest.BotMessage{MsgID: fmt.Sprintf("ack-%d", i), AIBotID: wsBotID, ChatID: "grp-bench",
			ChatType: "group", UserID: fmt.Sprintf("user%d", i%50)}
		start := time.Now()
		r := bot.postB(b, msg.Text("@Hermes 我还有几天年假？"))
		lat = append(lat, time.Since(start))
		if r.Stream.ID != msg.MsgID {
			b.Fatalf("callback %d answered %+v", i, r)
		}
	}
	b.StopTimer()
	chantest.ReportPercentiles(b, lat, "ms")
}

// BenchmarkAIBotFirstChunk measures the time from a message to the first
// piece of the model's answer shown in the stream, with a model streaming
// 20 tokens a second (one chunk every 50 ms): over the long connection
// (Hermes pushes the stream) and by callback (WeCom polls it; here every
// 50 ms, so the figure is Hermes' own delay, not WeCom's refresh cadence).
//
//	go test -run '^$' -bench AIBotFirstChunk -benchtime 20x ./gateway/
func BenchmarkAIBotFirstChunk(b *testing.B) {
	answer := strings.Repeat("你好，", 40) // 120 chunks of one rune at 20/s
	chunks := strings.Split(strings.TrimSuffix(strings.ReplaceAll(answer, "，", "，|"), "|"), "|")
	streaming := func(h *gatewaytest.Harness) {
		h.Model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
			return openaitest.Reply{Content: answer, Chunks: chunks, ChunkInterval: 50 * time.Millisecond}
		})
	}
	firstChunk := func(content string) bool {
		return strings.Contains(content, "你好")
	}

	b.Run("mode=websocket", func(b *testing.B) {
		h := gatewaytest.New(b)
		streaming(h)
		ws := wecomtest.NewBotWSServer(b, wsBotID, wsSecret)
		h.StartExtra(gatewaytest.WSBotYAML(ws.URL()), gateway.Deps{})
		ctx := gatewaytest.WithTimeout(b, 5*time.Minute)
		if _, err := ws.WaitSubscriptions(ctx, 1, true); err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			msg := wecomtest.BotMessage{MsgID: fmt.Sprintf("fc-%d", i), AIBotID: wsBotID, ChatID: fmt.Sprintf("u%d", i),
				ChatType: "single", UserID: fmt.Sprintf("u%d", i)}
			start := time.Now()
			reqID, err := ws.PushMessage(ctx, msg.Text("讲个笑话"))
			if err != nil {
				b.Fatal(err)
			}
			f, err := ws.WaitFrame(ctx, func(f wecomtest.BotFrame) bool {
				return f.ReqID == reqID && firstChunk(f.Reply.Stream.Content)
			})
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, f.At.Sub(start))
		}
		b.StopTimer()
		chantest.ReportPercentiles(b, lat, "ms")
	})

	b.Run("mode=callback", func(b *testing.B) {
		h := gatewaytest.New(b)
		streaming(h)
		h.StartExtra(callbackBotYAML(), gateway.Deps{})
		bot := newBotCaller(b, h, time.Now)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			msg := wecomtest.BotMessage{MsgID: fmt.Sprintf("fc-%d", i), AIBotID: wsBotID, ChatID: fmt.Sprintf("u%d", i),
				ChatType: "single", UserID: fmt.Sprintf("u%d", i)}
			start := time.Now()
			bot.postB(b, msg.Text("讲个笑话"))
			for {
				if r := bot.postB(b, msg.StreamRefresh(msg.MsgID)); firstChunk(r.Stream.Content) {
					break
				}
				if time.Since(start) > time.Minute {
					b.Fatal("no chunk within a minute")
				}
				time.Sleep(50 * time.Millisecond) // WeCom's refresh cadence, played fast
			}
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		chantest.ReportPercentiles(b, lat, "ms")
	})
}
