package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
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
func resetCalls(h *gatewaytest.Harness) int {
	n := 0
	for _, c := range h.Backend.Calls() {
		if c.Path == "/it/password/reset" {
			n++
		}
	}
	return n
}

// confirmFlow is a chat on a clock the test moves (step).
type confirmFlow struct {
	gatewaytest.Chat
	step func(d time.Duration)
}

func newConfirmFlow(t *testing.T) *confirmFlow { return newConfirmFlowWith(t, "") }

// newConfirmFlowWith is newConfirmFlow with configYAML(extra).
func newConfirmFlowWith(t *testing.T, extra string) *confirmFlow {
	h := gatewaytest.New(t)
	var mu sync.Mutex
	now := time.Now()
	f := &confirmFlow{Chat: gatewaytest.Chat{H: h}}
	f.Clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f.step = func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h.Model.SetHandler(resetModel)
	h.StartExtra(extra, gateway.Deps{Now: f.Clock})
	return f
}

func TestConfirmationFlow(t *testing.T) {
	t.Parallel()
	t.Run("Confirm", func(t *testing.T) {
		t.Parallel()
		f := newConfirmFlow(t)
		ask := f.Say(t, "zhangsan", "帮我重置 VPN 密码")
		if !strings.Contains(ask, "确认") || resetCalls(f.H) != 0 {
			t.Fatalf("asked %q with %d resets; want a question and nothing executed", ask, resetCalls(f.H))
		}
		done := f.Say(t, "zhangsan", "确认")
		if resetCalls(f.H) != 1 || !strings.Contains(done, "已重置") {
			t.Fatalf("after 确认: %q, %d resets", done, resetCalls(f.H))
		}
		if c := f.H.Backend.Calls(); c[len(c)-1].Identity.UserID != "zhangsan" {
			t.Fatalf("reset ran as %q", c[len(c)-1].Identity.UserID)
		}
		// The confirmation is spent: saying it again runs nothing.
		f.Say(t, "zhangsan", "确认")
		if resetCalls(f.H) != 1 {
			t.Fatalf("a second 确认 ran the reset again")
		}
	})
	t.Run("Refuse", func(t *testing.T) {
		t.Parallel()
		f := newConfirmFlow(t)
		f.Say(t, "zhangsan", "帮我重置 VPN 密码")
		if got := f.Say(t, "zhangsan", "取消"); !strings.Contains(got, "已取消") {
			t.Fatalf("after 取消: %q", got)
		}
		f.Say(t, "zhangsan", "确认")
		if resetCalls(f.H) != 0 {
			t.Fatal("a cancelled reset ran")
		}
	})
	t.Run("SomethingElseCancels", func(t *testing.T) {
		t.Parallel()
		f := newConfirmFlow(t)
		f.Say(t, "zhangsan", "帮我重置 VPN 密码")
		if got := f.Say(t, "zhangsan", "今天食堂吃什么"); !strings.Contains(got, "已取消") || !strings.Contains(got, "好的") {
			t.Fatalf("another request: %q, want the cancel note and an answer", got)
		}
		if resetCalls(f.H) != 0 {
			t.Fatal("reset ran")
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		f := newConfirmFlow(t)
		f.Say(t, "zhangsan", "帮我重置 VPN 密码")
		f.step(6 * time.Minute) // agent.confirm_timeout defaults to 5m
		if got := f.Say(t, "zhangsan", "确认"); !strings.Contains(got, "超时") || resetCalls(f.H) != 0 {
			t.Fatalf("late 确认: %q, %d resets", got, resetCalls(f.H))
		}
	})
	t.Run("AnotherUserAnswering", func(t *testing.T) {
		t.Parallel()
		f := newConfirmFlow(t)
		f.Say(t, "zhangsan", "帮我重置 VPN 密码")
		f.Say(t, "lisi", "确认")
		if resetCalls(f.H) != 0 {
			t.Fatal("another user's 确认 ran zhangsan's reset")
		}
		if done := f.Say(t, "zhangsan", "确认"); resetCalls(f.H) != 1 || !strings.Contains(done, "已重置") {
			t.Fatalf("zhangsan's own 确认 afterwards: %q", done)
		}
	})
}

// TestConfirmedCallWhoseFallbackNeedsConfirmation: 「确认」 of a call whose
// breaker is open runs its fallback; when the fallback needs confirmation
// itself nothing runs, so the user must not read 「已执行」 but be asked
// about the fallback. What finally runs is stored and shown masked.
func TestConfirmedCallWhoseFallbackNeedsConfirmation(t *testing.T) {
	t.Parallel()
	var fallbackCalls atomic.Int32
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(primary.Close)
	fallback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fallbackCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"summary":"备用系统已重置，临时密码已发到 13812345678","debug":"host=db7"}`)
	}))
	t.Cleanup(fallback.Close)
	dir := t.TempDir()
	params := "parameters:\n  type: object\n  properties:\n    system: {type: string}\n    new_password: {type: string}\n"
	for name, def := range map[string]string{
		"primary": "name: it_reset_primary\ndescription: 重置密码\n" + params + "endpoint: " + primary.URL + "/reset\n" +
			"confirm: {prompt: \"重置 VPN 密码\"}\ncircuit_breaker: {failures: 1, open_for: 1h}\nfallback: it_reset_backup\nidentity: none\n",
		"backup": "name: it_reset_backup\ndescription: 备用重置\n" + params + "endpoint: " + fallback.URL + "/reset\n" +
			"confirm: {prompt: \"用备用系统重置 VPN 密码\"}\nidentity: none\n",
	} {
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte("---\n"+def+"---\n"), 0o644)
	}
	h := gatewaytest.New(t)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == openai.ChatMessageRoleUser && strings.Contains(last.Content, "重置") {
			return openaitest.Reply{ToolCalls: []openai.ToolCall{
				openaitest.ToolCall("it_reset_primary", `{"system":"vpn","new_password":"S3cret-pw"}`)}}
		}
		return openaitest.Reply{Content: "好的。"}
	})
	f := &gatewaytest.Chat{H: h, Clock: time.Now}
	h.Start(gateway.Deps{SkillsFS: os.DirFS(dir)})

	f.Say(t, "zhangsan", "帮我重置 VPN 密码")
	if got := f.Say(t, "zhangsan", "确认"); !strings.Contains(got, "执行失败") {
		t.Fatalf("first 确认 (backend down): %q", got)
	} // the breaker is open now
	f.Say(t, "zhangsan", "帮我重置 VPN 密码")
	got := f.Say(t, "zhangsan", "确认")
	if strings.Contains(got, "已执行") || !strings.Contains(got, "未执行") || !strings.Contains(got, "用备用系统重置 VPN 密码") ||
		fallbackCalls.Load() != 0 {
		t.Fatalf("breaker open, fallback needs confirmation: replied %q with %d fallback calls; want no 已执行 and a question",
			got, fallbackCalls.Load())
	}
	got = f.Say(t, "zhangsan", "确认")
	if fallbackCalls.Load() != 1 || !strings.Contains(got, "已执行：备用系统已重置") || strings.Contains(got, "13812345678") {
		t.Fatalf("confirming the fallback: %q (%d calls), want it run and the number masked", got, fallbackCalls.Load())
	}
	// The trace of the confirmation path holds no secret argument, no
	// personal number and no debug field.
	if n := h.Count(`SELECT count(*) FROM run_trace WHERE args LIKE '%S3cret%' OR observation LIKE '%13812345678%' OR observation LIKE '%db7%'`); n != 0 {
		t.Errorf("%d run steps store raw secrets, numbers or debug fields", n)
	}
	if n := h.Count(`SELECT count(*) FROM run_steps WHERE tool = 'it_reset_backup' AND observation LIKE '%138****5678%'`); n != 1 {
		t.Errorf("the fallback's masked answer is not in the trace (%d steps)", n)
	}
}
