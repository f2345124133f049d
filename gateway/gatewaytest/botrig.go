package gatewaytest

import (
	"context"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
)

// BotRig is one Hermes with an AI bot on a long connection, WeCom's
// file server, and a model that records what it was sent.
type BotRig struct {
	H     *Harness
	WS    *wecomtest.BotWSServer
	Files *wecomtest.BotFileServer
	// Ctx ends a minute after the rig started, or with the test.
	Ctx  context.Context
	mu   sync.Mutex
	seen []openai.ChatCompletionMessage // the last user message of each model call
}

// NewBotRig starts a BotRig with modelYAML (more keys of the model
// section).
func NewBotRig(t *testing.T, modelYAML string) *BotRig {
	t.Helper()
	return NewBotRigWith(t, modelYAML, "")
}

// NewBotRigWith is NewBotRig with more top-level configuration.
func NewBotRigWith(t *testing.T, modelYAML, extra string) *BotRig {
	t.Helper()
	return NewBotRigDeps(t, modelYAML, extra, gateway.Deps{})
}

// NewBotRigDeps is NewBotRigWith with deps (a clock).
func NewBotRigDeps(t *testing.T, modelYAML, extra string, deps gateway.Deps) *BotRig {
	t.Helper()
	return NewBotRigFetching(t, modelYAML, LocalFetchYAML, extra, deps)
}

// NewBotRigFetching is NewBotRigDeps with the bot's fetch_ keys (""
// for the defaults: WeCom's hosts only).
func NewBotRigFetching(t *testing.T, modelYAML, fetch, extra string, deps gateway.Deps) *BotRig {
	t.Helper()
	r := &BotRig{H: New(t), WS: wecomtest.NewBotWSServer(t, WSBotID, WSSecret), Files: wecomtest.NewBotFileServer(t)}
	r.H.ModelYAML = modelYAML
	r.H.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		last := req.Messages[len(req.Messages)-1]
		r.mu.Lock()
		r.seen = append(r.seen, last)
		r.mu.Unlock()
		return openaitest.Reply{Content: "收到"}
	})
	r.H.StartExtra(WSBotYAMLFetching(r.WS.URL(), fetch)+extra, deps)
	r.Ctx = WithTimeout(t, 60*time.Second)
	if _, err := r.WS.WaitSubscriptions(r.Ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	return r
}

// Ask pushes a message frame and returns the text of the finished answer.
func (r *BotRig) Ask(t *testing.T, frame []byte) string {
	t.Helper()
	reqID, err := r.WS.PushMessage(r.Ctx, frame)
	if err != nil {
		t.Fatal(err)
	}
	done, err := r.WS.WaitFrame(r.Ctx, func(f wecomtest.BotFrame) bool {
		return f.Cmd == "aibot_respond_msg" && f.ReqID == reqID && f.Reply.Stream.Finish
	})
	if err != nil {
		t.Fatal(err)
	}
	r.H.WaitIdle(r.Ctx)
	return done.Reply.Stream.Content
}

// Calls are the last user message of each model call so far.
func (r *BotRig) Calls() []openai.ChatCompletionMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]openai.ChatCompletionMessage(nil), r.seen...)
}
