package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/skills"
)

func TestRun_UserTextNormalised(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(answer("好的"))
	if _, err := agent.Run(context.Background(), m, testTurn("  cafe\u0301\x00 的\u200B年假  \t 还剩几天？\r\n\r\n\r\n谢谢 ", nil), testOptions()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := lastMessage(srv.Requests()[0]).Content, "café 的年假 还剩几天？\n\n谢谢"; got != want {
		t.Errorf("user message = %q, want %q", got, want)
	}
}

func TestRun_TokenBudgetTruncationRecorded(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(answer("日志里是超时。"))
	text := "下面是报错日志：" + strings.Repeat("2026-01-01 ERROR upstream timeout after 30s; ", 300) + "请问是什么问题？"
	opts := testOptions()
	opts.MaxInputTokens = 1200

	res, err := agent.Run(context.Background(), m, testTurn(text, hrTools(nil)), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.InputTruncated || !hasDelta(res.Steps[0], "input truncated: ") {
		t.Errorf("truncation not recorded: InputTruncated=%v, first step delta %q", res.InputTruncated, res.Steps[0].Delta)
	}
	sent := lastMessage(srv.Requests()[0]).Content
	if len(sent) >= len(text)/2 || !strings.HasPrefix(sent, "下面是报错日志") || !strings.HasSuffix(sent, "请问是什么问题？") ||
		!strings.Contains(sent, "too long") {
		t.Errorf("user message of %d bytes (from %d), want head, tail and a marker", len(sent), len(text))
	}
	// The system prompt is placed first, whole.
	if sys := srv.Requests()[0].Messages[0].Content; !strings.HasSuffix(sys, "call the finish tool with the answer.") {
		t.Errorf("system prompt was cut")
	}
}

func TestRun_ToolDescriptionSaysEachThingOnce(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(answer("好"))
	tools := []skills.Tool{&fakeTool{name: "it_ticket_create",
		params: `{"type":"object","properties":{"priority":{"type":"string","enum":["low","high"]},"title":{"type":"string","maxLength":30}},"required":["title"]}`,
		edit: func(s *skills.Spec) {
			s.Examples = []string{"帮我提个工单：VPN 连不上"}
			s.Confirm = true
		}}}
	if _, err := agent.Run(context.Background(), m, testTurn("提工单", tools), testOptions()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	req := srv.Requests()[0]
	// The schema travels in the tools block only; the description adds
	// what the schema cannot say.
	desc := req.Tools[0].Function.Description
	if want := "test tool it_ticket_create\nIt asks the user to confirm before anything happens."; desc != want {
		t.Errorf("description =\n%s\nwant\n%s", desc, want)
	}
	if sys := req.Messages[0].Content; strings.Contains(sys, "it_ticket_create") || strings.Contains(sys, "maxLength") ||
		strings.Contains(sys, "VPN 连不上") {
		t.Errorf("system prompt repeats the tool: %q", sys)
	}
}

func TestRun_TextCallsGetDefinitionsInSystemPrompt(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(answer("好"))
	tools := []skills.Tool{&fakeTool{name: "it_ticket_create",
		params: `{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`}}
	opts := testOptions()
	opts.ToolsInText = true
	if _, err := agent.Run(context.Background(), m, testTurn("提工单", tools), opts); err != nil {
		t.Fatalf("Run: %v", err)
	}
	req := srv.Requests()[0]
	if len(req.Tools) != 0 {
		t.Errorf("tools block sent to an endpoint without tool calls: %d tools", len(req.Tools))
	}
	if sys := req.Messages[0].Content; !strings.Contains(sys, "### it_ticket_create\ntest tool it_ticket_create\nParameters (JSON Schema): {") {
		t.Errorf("system prompt lacks the definition: %q", sys)
	}
}
