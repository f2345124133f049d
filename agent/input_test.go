package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

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
	// The system prompt (with the skill context) is placed first, whole.
	if sys := srv.Requests()[0].Messages[0].Content; !strings.Contains(sys, "</SKILL_CONTEXT>") {
		t.Errorf("system prompt was cut")
	}
}

// skill builds a tool with triggers.
func skill(name string, edit func(*skills.Spec)) skills.Tool {
	return &fakeTool{name: name, out: "{}", edit: edit}
}

func TestRun_OffersRelevantToolsUpToCap(t *testing.T) {
	tools := []skills.Tool{
		skill("a_always", func(s *skills.Spec) { s.Triggers.Always = true }),
		skill("b_bound", func(s *skills.Spec) { s.Triggers.IntentContains = []string{"报销"} }),
		skill("c_leave", func(s *skills.Spec) { s.Triggers.IntentContains = []string{"年假", "LEAVE"} }),
		skill("d_ticket", func(s *skills.Spec) { s.Triggers.IntentRegex = []string{`INC-\d+`} }),
		skill("e_legacy", nil), // no triggers: offered, lowest priority
		skill("f_payslip", func(s *skills.Spec) { s.Triggers.IntentContains = []string{"工资"} }),
	}
	for _, tc := range []struct {
		name     string
		text     string
		history  []openai.ChatCompletionMessage
		maxTools int
		want     []string
	}{
		{name: "Contains", text: "我还有几天年假？", want: []string{"a_always", "b_bound", "c_leave", "e_legacy"}},
		{name: "CaseInsensitive", text: "annual leave?", want: []string{"a_always", "b_bound", "c_leave", "e_legacy"}},
		{name: "Regex", text: "INC-1001 呢？", want: []string{"a_always", "b_bound", "d_ticket", "e_legacy"}},
		{name: "FollowUpUsesPreviousQuestion", text: "那病假呢？",
			history: []openai.ChatCompletionMessage{{Role: "user", Content: "我还有几天年假？"}, {Role: "assistant", Content: "5 天"}},
			want:    []string{"a_always", "b_bound", "c_leave", "e_legacy"}},
		{name: "CapKeepsHigherPriority", text: "年假和工资", maxTools: 3, want: []string{"a_always", "b_bound", "c_leave"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, m := newModel(t)
			srv.Script(answer("好"))
			turn := testTurn(tc.text, tools)
			turn.BoundTools, turn.History = []string{"b_bound"}, tc.history
			opts := testOptions()
			opts.MaxTools = tc.maxTools
			if _, err := agent.Run(context.Background(), m, turn, opts); err != nil {
				t.Fatalf("Run: %v", err)
			}
			req := srv.Requests()[0]
			if got := toolNames(req); !slices.Equal(got, tc.want) {
				t.Errorf("offered %q, want %q", got, tc.want)
			}
			sys := req.Messages[0].Content
			for _, name := range tc.want {
				if !strings.Contains(sys, "### "+name) {
					t.Errorf("skill context lacks %s", name)
				}
			}
		})
	}
}

func TestRun_SchemaRenderedInToolDescription(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(answer("好"))
	tools := []skills.Tool{&fakeTool{name: "it_ticket_create",
		params: `{"type":"object","properties":{"priority":{"type":"string","enum":["low","high"]},"title":{"type":"string","maxLength":30}},"required":["title"]}`,
		edit:   func(s *skills.Spec) { s.Examples = []string{"帮我提个工单：VPN 连不上"} }}}
	if _, err := agent.Run(context.Background(), m, testTurn("提工单", tools), testOptions()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	req := srv.Requests()[0]
	desc := req.Tools[0].Function.Description
	want := "test tool it_ticket_create\n\nArguments:\n- priority (string): one of \"low\", \"high\"\n- title (string, required): at most 30 characters"
	if desc != want {
		t.Errorf("description =\n%s\nwant\n%s", desc, want)
	}
	if sys := req.Messages[0].Content; !strings.Contains(sys, "Example requests: 帮我提个工单：VPN 连不上") ||
		!strings.Contains(sys, `Parameters (JSON Schema): {"type":"object"`) {
		t.Errorf("skill context lacks examples or schema: %q", sys)
	}
}
