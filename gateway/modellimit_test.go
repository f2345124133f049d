package gateway_test

import (
	"context"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
)

// A run waiting for its turn at the model shows 「排队中…」 where the
// platform shows an answer while it grows, and then its answer.
func TestQueuedRunShowsQueuedInItsDraft(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	h.model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
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
	h.modelYAML = "  max_concurrent: 1\n  queued_hint_after: 50ms"
	gw := h.startExtra("worker:\n  draft_interval: 20ms\n", gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := withTimeout(t, 30*time.Second)

	accept(t, gw, ch.Message("a", "q-1", "zhangsan", "zhangsan", "先来的", false, false))
	waitFor(t, ctx, func() bool { return len(h.model.Requests()) == 1 })
	accept(t, gw, ch.Message("a", "q-2", "lisi", "lisi", "后到的", false, false))
	ref := channels.MessageRef{Channel: "test", Account: "a", MsgID: "q-2"}
	waitFor(t, ctx, func() bool {
		p, err := gw.Progress(ctx, ref)
		return err == nil && p.Text == config.DefaultMessages.Queued
	})
	close(release)
	waitFor(t, ctx, func() bool {
		p, err := gw.Progress(ctx, ref)
		return err == nil && p.Done && p.Text == "答：后到的"
	})
}
