package gateway_test

import (
	"context"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// Two messages of one user arriving together are answered one at a time,
// in order, and the second run sees the first turn as history. Another
// user's message is not held up by them.
func TestOneRunPerSessionInOrderWithHistory(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var mu sync.Mutex
	zhangInFlight, overlap := 0, false
	var secondReq []openai.ChatCompletionMessage
	firstStarted, release := make(chan struct{}), make(chan struct{})
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		text := req.Messages[len(req.Messages)-1].Content
		reply := openaitest.Reply{Content: "答：" + text}
		if text == "第一条" || text == "第二条" {
			reply.Hook = func(ctx context.Context) error {
				mu.Lock()
				zhangInFlight++
				overlap = overlap || zhangInFlight > 1
				if text == "第二条" {
					secondReq = req.Messages
				}
				mu.Unlock()
				defer func() { mu.Lock(); zhangInFlight--; mu.Unlock() }()
				if text == "第一条" {
					close(firstStarted)
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return nil
			}
		}
		return reply
	})
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)

	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "第一条", "s-1"), time.Now())
	gatewaytest.Post(t, u, body)
	<-firstStarted
	u, body = h.CallbackRequest(gatewaytest.TextXML("zhangsan", "第二条", "s-2"), time.Now())
	gatewaytest.Post(t, u, body)
	u, body = h.CallbackRequest(gatewaytest.TextXML("lisi", "别人的问题", "s-3"), time.Now())
	gatewaytest.Post(t, u, body)

	// lisi is answered while zhangsan's first run is still thinking.
	msgs, err := h.WeComAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].ToUser != "lisi" {
		t.Fatalf("first delivery went to %s, want lisi (not held up by zhangsan's session)", msgs[0].ToUser)
	}
	close(release)
	if _, err := h.WeComAPI.WaitMessages(ctx, 3); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	var zhang []string
	for _, m := range h.WeComAPI.Messages() {
		if m.ToUser == "zhangsan" {
			zhang = append(zhang, m.Content)
		}
	}
	if len(zhang) != 2 || zhang[0] != "答：第一条" || zhang[1] != "答：第二条" {
		t.Fatalf("zhangsan got %q, want the two answers in order", zhang)
	}
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Fatal("two runs of one session overlapped")
	}
	// system, user 第一条, assistant 答：第一条, user 第二条
	if len(secondReq) != 4 || secondReq[1].Content != "第一条" || secondReq[2].Content != "答：第一条" {
		t.Fatalf("second run's messages %+v, want the first turn as history", secondReq)
	}
}

// A conversation idle for longer than agent.history_idle starts afresh.
func TestIdleSessionStartsWithoutHistory(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h.Model.Script(openaitest.Reply{Content: "好的"})
	h.Start(gateway.Deps{Now: clock})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "第一条", "idle-1"), clock())
	gatewaytest.Post(t, u, body)
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(3 * time.Hour) // default history_idle is 2h
	mu.Unlock()
	u, body = h.CallbackRequest(gatewaytest.TextXML("zhangsan", "第二条", "idle-2"), clock())
	gatewaytest.Post(t, u, body)
	if _, err := h.WeComAPI.WaitMessages(ctx, 2); err != nil {
		t.Fatal(err)
	}
	reqs := h.Model.Requests()
	if got := len(reqs[len(reqs)-1].Messages); got != 2 {
		t.Fatalf("after 3 idle hours the model saw %d messages, want system + the new question", got)
	}
}
