package gateway_test

import (
	"encoding/json"
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

// A skill that needs more information asks the user; the user's answer
// continues the same task (not a new one), also through the store.
func TestFollowupQuestionContinuesTheTask(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var bodies []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		var args map[string]any
		_ = json.Unmarshal(b, &args)
		w.Header().Set("Content-Type", "application/json")
		if args["system"] == nil {
			io.WriteString(w, `{"requires_followup": true, "question": "请问要开通哪个系统的权限？"}`)
			return
		}
		io.WriteString(w, `{"summary": "已为 `+r.Header.Get("X-Hermes-User-Id")+` 开通 oa 权限"}`)
	}))
	defer backend.Close()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "access"), 0o755)
	os.WriteFile(filepath.Join(dir, "access", "SKILL.md"), []byte(`---
name: access_request
description: 为提问者开通系统权限。
parameters:
  type: object
  properties:
    system: {type: string}
endpoint: `+backend.URL+`/access
confirm: false
identity: none
---
`), 0o644)

	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == openai.ChatMessageRoleTool:
			return openaitest.Reply{Content: "已开通 OA 权限。"}
		case strings.Contains(last.Content, "OA"):
			return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("access_request", `{"system":"oa"}`)}}
		default:
			return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("access_request", `{}`)}}
		}
	})
	h.Start(gateway.Deps{SkillsFS: os.DirFS(dir)})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "帮我开通权限", "f-1"), time.Now())
	gatewaytest.Post(t, u, body)
	msgs, err := h.WeComAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msgs[0].Content, "哪个系统") {
		t.Fatalf("first reply %q, want the skill's question", msgs[0].Content)
	}
	if n := h.Count(`SELECT count(*) FROM session_pending WHERE kind = 'followup'`); n != 1 {
		t.Fatalf("pending follow-ups = %d, want 1", n)
	}
	u, body = h.CallbackRequest(gatewaytest.TextXML("zhangsan", "OA 系统", "f-2"), time.Now())
	gatewaytest.Post(t, u, body)
	msgs, err = h.WeComAPI.WaitMessages(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[1].Content != "已开通 OA 权限。" || len(bodies) != 2 {
		t.Fatalf("second reply %q after %d backend calls", msgs[1].Content, len(bodies))
	}
	// The resumed request carries the first request and the question: the
	// same task, continued.
	reqs := h.Model.Requests()
	var sawQuestion bool
	for _, m := range reqs[len(reqs)-2].Messages {
		sawQuestion = sawQuestion || strings.Contains(m.Content, "哪个系统")
	}
	if !sawQuestion {
		t.Fatal("the continued task does not contain the skill's question")
	}
	h.WaitIdle(ctx)
	if n := h.Count(`SELECT count(*) FROM session_pending`); n != 0 {
		t.Fatalf("pending rows = %d after the answer, want 0", n)
	}
}
