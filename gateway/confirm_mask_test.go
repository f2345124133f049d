package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// TestConfirmationPromptIsMasked: a confirm.prompt rendered from the
// arguments shows a personal number masked, like any reply, on the
// 「确认」 question, on the fallback's question, and wherever it is
// stored (the run's reply and steps, the session's pending payload, the
// conversation history); the call itself still gets the number.
func TestConfirmationPromptIsMasked(t *testing.T) {
	t.Parallel()
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(primary.Close)
	var got []byte
	backup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"summary":"已开通"}`)
	}))
	t.Cleanup(backup.Close)
	dir := t.TempDir()
	params := "parameters:\n  type: object\n  properties:\n    phone: {type: string}\n"
	for name, def := range map[string]string{
		"primary": "name: it_vpn_open\ndescription: 开通 VPN\n" + params + "endpoint: " + primary.URL + "/vpn\n" +
			"confirm: {prompt: \"给 {{.Args.phone}} 开通 VPN\"}\ncircuit_breaker: {failures: 1, open_for: 1h}\nfallback: it_vpn_backup\nidentity: none\n",
		"backup": "name: it_vpn_backup\ndescription: 备用开通\n" + params + "endpoint: " + backup.URL + "/vpn\n" +
			"confirm: {prompt: \"用备用系统给 {{.Args.phone}} 开通 VPN\"}\nidentity: none\n",
	} {
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte("---\n"+def+"---\n"), 0o644)
	}
	h := gatewaytest.New(t)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == openai.ChatMessageRoleUser && strings.Contains(last.Content, "开通") {
			return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_vpn_open", `{"phone":"13812345678"}`)}}
		}
		return openaitest.Reply{Content: "好的。"}
	})
	f := &gatewaytest.Chat{H: h, Clock: time.Now}
	h.Start(gateway.Deps{SkillsFS: os.DirFS(dir)})
	const raw, masked = "13812345678", "138****5678"

	ask := f.Say(t, "zhangsan", "给 13812345678 开通 VPN")
	if strings.Contains(ask, raw) || !strings.Contains(ask, "给 "+masked+" 开通 VPN") {
		t.Fatalf("the 「确认」 question shows %q, want the number masked", ask)
	}
	f.Say(t, "zhangsan", "确认") // the primary is down: the breaker opens
	f.Say(t, "zhangsan", "给 13812345678 开通 VPN")
	fb := f.Say(t, "zhangsan", "确认")
	if strings.Contains(fb, raw) || !strings.Contains(fb, "用备用系统给 "+masked+" 开通 VPN") {
		t.Fatalf("the fallback's question shows %q, want the number masked", fb)
	}
	for what, query := range map[string]string{
		"run replies":     `SELECT count(*) FROM runs WHERE reply LIKE '%13812345678%' OR error LIKE '%13812345678%'`,
		"run steps":       `SELECT count(*) FROM run_trace WHERE observation LIKE '%13812345678%' OR content LIKE '%13812345678%' OR error LIKE '%13812345678%'`,
		"pending prompts": `SELECT count(*) FROM session_pending WHERE payload->>'Prompt' LIKE '%13812345678%'`,
		"history":         `SELECT count(*) FROM messages WHERE content LIKE '%13812345678%' AND role = 'assistant'`,
	} {
		if n := h.Count(query); n != 0 {
			t.Errorf("%s: %d rows hold the prompt's number unmasked", what, n)
		}
	}
	f.Say(t, "zhangsan", "确认")
	if !strings.Contains(string(got), raw) {
		t.Errorf("the confirmed call sent %s, want the number itself", got)
	}
}
