package gatewaytest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
)

// The sample leave-balance skill and the answer AskLeave's model gives
// after calling it.
const (
	LeaveTool  = "hr_leave_balance"
	LeaveReply = "你今年还剩 12 天年假。"
)

// AskLeave posts zhangsan's leave question through the WeCom callback,
// with the model calling the leave skill, and waits until the reply is
// delivered.
func AskLeave(t *testing.T, h *Harness, msgID string) {
	t.Helper()
	h.Model.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall(LeaveTool, `{}`)}},
		openaitest.Reply{Content: LeaveReply},
	)
	ctx := WithTimeout(t, 30*time.Second)
	u, body := h.CallbackRequest(TextXML("zhangsan", "我还有几天年假？", msgID), time.Now())
	if status, _ := Post(t, u, body); status != http.StatusOK {
		t.Fatalf("callback: %d", status)
	}
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
}

// Get fetches a gateway URL and returns status and body.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Probe asks url as a readiness probe does, again while the answer is one
// of an unfinished check (its 2 s budget spent on a loaded machine) rather
// than want, at most probeTries times; it returns the last answer.
func Probe(t testing.TB, url string, want func(status int, body string) bool) (int, string) {
	t.Helper()
	const probeTries = 10
	var status int
	var body string
	for range probeTries {
		status, body = Get(t, url)
		if want(status, body) || !strings.Contains(body, context.DeadlineExceeded.Error()) {
			break
		}
	}
	return status, body
}
