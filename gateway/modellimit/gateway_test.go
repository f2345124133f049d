package modellimit_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// A run waiting for its turn at the model shows 「排队中…」 where the
// platform shows an answer while it grows, and then its answer.
func TestQueuedRunShowsQueuedInItsDraft(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	release := make(chan struct{})
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		text := req.Messages[len(req.Messages)-1].Content
		reply := openaitest.Reply{Content: "答：" + text}
		if text == "先来的" {
			reply.Hook = func(ctx context.Context) error {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			}
		}
		return reply
	})
	ch := chantest.New("test", channels.Limits{MaxBytes: 2048, Format: channels.FormatText, Streams: true})
	h.ModelYAML = "  max_concurrent: 1\n  queued_hint_after: 50ms"
	gw := h.StartExtra("worker:\n  draft_interval: 20ms\n", gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	gatewaytest.Accept(t, gw, ch.Message("a", "q-1", "zhangsan", "zhangsan", "先来的", false, false))
	gatewaytest.WaitFor(t, ctx, func() bool { return len(h.Model.Requests()) == 1 })
	gatewaytest.Accept(t, gw, ch.Message("a", "q-2", "lisi", "lisi", "后到的", false, false))
	ref := channels.MessageRef{Channel: "test", Account: "a", MsgID: "q-2"}
	gatewaytest.WaitFor(t, ctx, func() bool {
		p, err := gw.Progress(ctx, ref)
		return err == nil && p.Text == config.DefaultMessages.Queued
	})
	close(release)
	gatewaytest.WaitFor(t, ctx, func() bool {
		p, err := gw.Progress(ctx, ref)
		return err == nil && p.Done && p.Text == "答：后到的"
	})
}

// A 429 is retried in one place, the run's: the limiter holds the replica
// for the Retry-After and hands it to the run with the error, so the retry
// waits once (the answer's Retry-After, not that and the run's backoff on
// top) and the run's trace shows the attempt the endpoint refused.
func TestModel429RetriedOnceByTheRun(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var mu sync.Mutex
	var at []time.Time
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
		if len(at) == 1 {
			return openaitest.Reply{Status: http.StatusTooManyRequests, Content: "Rate limit reached", Header: http.Header{"Retry-After": {"1"}}}
		}
		return openaitest.Reply{Content: "答：" + req.Messages[len(req.Messages)-1].Content}
	})
	ch := gatewaytest.Channel(2048)
	gw := h.StartExtra("", gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	gatewaytest.Accept(t, gw, ch.Message("a", "rl-1", "zhangsan", "zhangsan", "你好", false, false))
	if _, err := ch.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 2 {
		t.Fatalf("%d model calls, want the 429 and one retry", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < time.Second || gap >= 1500*time.Millisecond {
		t.Fatalf("retried %s after the 429, want its Retry-After (1s) once, not stacked with a backoff", gap)
	}
	if n := h.Count(`SELECT count(*) FROM run_trace WHERE kind = 'model' AND (detail->>'Attempts')::int = 2
		AND detail->'FailedAttempts'->>0 LIKE '%429%'`); n != 1 {
		t.Fatalf("%d model steps show the refused attempt, want 1", n)
	}
}
