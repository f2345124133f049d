package gateway_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
)

// resetModel asks to reset the VPN password when told to, and otherwise
// answers plainly.
func resetModel(req openai.ChatCompletionRequest) openaitest.Reply {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == openai.ChatMessageRoleUser && strings.Contains(last.Content, "重置") {
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_password_reset", `{"system":"vpn"}`)}}
	}
	return openaitest.Reply{Content: "好的。"}
}

// resetCalls counts the backend's password resets.
func (h *harness) resetCalls() int {
	n := 0
	for _, c := range h.backend.Calls() {
		if c.Path == "/it/password/reset" {
			n++
		}
	}
	return n
}

type confirmFlow struct {
	h     *harness
	clock func() time.Time
	step  func(d time.Duration)
	seq   int
}

func newConfirmFlow(t *testing.T) *confirmFlow {
	h := newHarness(t)
	var mu sync.Mutex
	now := time.Now()
	f := &confirmFlow{h: h}
	f.clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f.step = func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h.model.SetHandler(resetModel)
	h.start(gateway.Deps{Now: f.clock})
	return f
}

// say sends text as user and returns the reply it gets.
func (f *confirmFlow) say(t *testing.T, user, text string) string {
	t.Helper()
	f.seq++
	ctx := withTimeout(t, 30*time.Second)
	before := len(f.h.wecomAPI.Messages())
	u, body := f.h.callbackRequest(textXML(user, text, "c-"+strings.Repeat("x", f.seq)), f.clock())
	if status, _ := post(t, u, body); status != 200 {
		t.Fatalf("callback answered %d", status)
	}
	msgs, err := f.h.wecomAPI.WaitMessages(ctx, before+1)
	if err != nil {
		t.Fatal(err)
	}
	f.h.waitIdle(ctx)
	m := msgs[len(msgs)-1]
	if m.ToUser != user {
		t.Fatalf("reply went to %s, want %s", m.ToUser, user)
	}
	return m.Content
}

func TestConfirmationFlow(t *testing.T) {
	t.Run("Confirm", func(t *testing.T) {
		f := newConfirmFlow(t)
		ask := f.say(t, "zhangsan", "帮我重置 VPN 密码")
		if !strings.Contains(ask, "确认") || f.h.resetCalls() != 0 {
			t.Fatalf("asked %q with %d resets; want a question and nothing executed", ask, f.h.resetCalls())
		}
		done := f.say(t, "zhangsan", "确认")
		if f.h.resetCalls() != 1 || !strings.Contains(done, "已重置") {
			t.Fatalf("after 确认: %q, %d resets", done, f.h.resetCalls())
		}
		if c := f.h.backend.Calls(); c[len(c)-1].Identity.UserID != "zhangsan" {
			t.Fatalf("reset ran as %q", c[len(c)-1].Identity.UserID)
		}
		// The confirmation is spent: saying it again runs nothing.
		f.say(t, "zhangsan", "确认")
		if f.h.resetCalls() != 1 {
			t.Fatalf("a second 确认 ran the reset again")
		}
	})
	t.Run("Refuse", func(t *testing.T) {
		f := newConfirmFlow(t)
		f.say(t, "zhangsan", "帮我重置 VPN 密码")
		if got := f.say(t, "zhangsan", "取消"); !strings.Contains(got, "已取消") {
			t.Fatalf("after 取消: %q", got)
		}
		f.say(t, "zhangsan", "确认")
		if f.h.resetCalls() != 0 {
			t.Fatal("a cancelled reset ran")
		}
	})
	t.Run("SomethingElseCancels", func(t *testing.T) {
		f := newConfirmFlow(t)
		f.say(t, "zhangsan", "帮我重置 VPN 密码")
		if got := f.say(t, "zhangsan", "今天食堂吃什么"); !strings.Contains(got, "已取消") || !strings.Contains(got, "好的") {
			t.Fatalf("another request: %q, want the cancel note and an answer", got)
		}
		if f.h.resetCalls() != 0 {
			t.Fatal("reset ran")
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		f := newConfirmFlow(t)
		f.say(t, "zhangsan", "帮我重置 VPN 密码")
		f.step(6 * time.Minute) // agent.confirm_timeout defaults to 5m
		if got := f.say(t, "zhangsan", "确认"); !strings.Contains(got, "超时") || f.h.resetCalls() != 0 {
			t.Fatalf("late 确认: %q, %d resets", got, f.h.resetCalls())
		}
	})
	t.Run("AnotherUserAnswering", func(t *testing.T) {
		f := newConfirmFlow(t)
		f.say(t, "zhangsan", "帮我重置 VPN 密码")
		f.say(t, "lisi", "确认")
		if f.h.resetCalls() != 0 {
			t.Fatal("another user's 确认 ran zhangsan's reset")
		}
		if done := f.say(t, "zhangsan", "确认"); f.h.resetCalls() != 1 || !strings.Contains(done, "已重置") {
			t.Fatalf("zhangsan's own 确认 afterwards: %q", done)
		}
	})
}
