package agent_test

import (
	"context"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
)

func TestRun_MasksPhoneNumberInReply(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		call("hr_contact", `{}`),
		answer("王五的手机是 13912345678，紧急联系人 13712345678，身份证 11010519900307123X。"),
	)
	tools := []skills.Tool{&fakeTool{name: "hr_contact", contentType: "application/json",
		out:  `{"name":"王五","mobile":"13912345678","emergency":"13712345678","debug":{"sql":"select * from staff"}}`,
		edit: func(s *skills.Spec) { s.SafeFields = []string{"mobile"} }}}

	res, err := agent.Run(context.Background(), m, testTurn("王五的手机号多少？", tools), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	// The number from the safe field stays; the others are masked, in the
	// reply and already in what the model saw.
	if want := "王五的手机是 13912345678，紧急联系人 137****5678，身份证 1101**********123X。"; res.Reply != want {
		t.Errorf("Reply = %q, want %q", res.Reply, want)
	}
	obs := lastMessage(srv.Requests()[1]).Content
	if want := `{"name":"王五","mobile":"13912345678","emergency":"137****5678"}`; obs != want {
		t.Errorf("observation = %q, want %q (debug dropped, emergency masked)", obs, want)
	}
}

func TestRun_ResponseTemplateAnswers(t *testing.T) {
	template := func(s *skills.Spec) {
		s.ResponseTemplate = "你还有 {{.remaining_days}} 天年假（{{.year}} 年）。"
	}
	t.Run("OnlyCallHasTemplate", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(call("hr_leave_balance", `{}`), answer("You have 5 days of leave left."))
		tools := []skills.Tool{&fakeTool{name: "hr_leave_balance", contentType: "application/json",
			out: `{"remaining_days": 5, "year": 2026, "_internal": "x"}`, edit: template}}
		res, err := agent.Run(context.Background(), m, testTurn("我还有几天年假？", tools), testOptions())
		if err != nil || res.StopReason != agent.StopFinished {
			t.Fatalf("Run = %q, %v", res.StopReason, err)
		}
		if want := "你还有 5 天年假（2026 年）。"; res.Reply != want {
			t.Errorf("Reply = %q, want the template's %q", res.Reply, want)
		}
		if !anyDelta(res.Steps, "response template of hr_leave_balance") {
			t.Errorf("the trace does not say the template answered")
		}
	})
	t.Run("TwoCallsUseTheModel", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(openaitest.Reply{ToolCalls: []openai.ToolCall{
			openaitest.ToolCall("hr_leave_balance", `{}`), openaitest.ToolCall("it_ticket_status", `{}`)}},
			answer("年假 5 天，工单处理中。"))
		tools := []skills.Tool{
			&fakeTool{name: "hr_leave_balance", contentType: "application/json", out: `{"remaining_days": 5, "year": 2026}`, edit: template},
			&fakeTool{name: "it_ticket_status", out: `{"status":"处理中"}`},
		}
		res, _ := agent.Run(context.Background(), m, testTurn("年假和工单", tools), testOptions())
		if res.Reply != "年假 5 天，工单处理中。" {
			t.Errorf("Reply = %q, want the model's answer", res.Reply)
		}
	})
	t.Run("MissingKeyFallsBack", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(call("hr_leave_balance", `{}`), answer("你还有 5 天年假。"))
		tools := []skills.Tool{&fakeTool{name: "hr_leave_balance", contentType: "application/json", out: `{"remaining_days": 5}`, edit: template}}
		res, _ := agent.Run(context.Background(), m, testTurn("我还有几天年假？", tools), testOptions())
		if res.Reply != "你还有 5 天年假。" {
			t.Errorf("Reply = %q, want the model's answer when the template fails", res.Reply)
		}
	})
}

func TestRun_FormatCheckAsksOnceToFixTable(t *testing.T) {
	table := "| 假期 | 剩余 |\n| --- | --- |\n| 年假 | 5 天 |\n| 病假 | 10 天 |"
	for _, tc := range []struct {
		name      string
		fix       string
		wantReply string
	}{
		{"Fixed", table, table},
		{"StillProse", "年假 5 天，病假 10 天。", "年假 5 天，病假 10 天。"}, // asked once only
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, m := newModel(t)
			srv.Script(answer("你的年假还有 5 天，病假 10 天。"), answer(tc.fix), answer("a third call must not happen"))
			res, err := agent.Run(context.Background(), m, testTurn("用表格列出我的各类假期余额", nil), testOptions())
			if err != nil || res.StopReason != agent.StopFinished {
				t.Fatalf("Run = %q, %v", res.StopReason, err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("model calls = %d, want the answer and one fix", len(reqs))
			}
			if got := lastMessage(reqs[1]).Content; !strings.Contains(got, "markdown table") || !strings.HasPrefix(got, "[Hermes check]") {
				t.Errorf("fix request = %q", got)
			}
			if res.Reply != tc.wantReply {
				t.Errorf("Reply = %q, want %q", res.Reply, tc.wantReply)
			}
			if s := res.Steps[len(res.Steps)-1]; s.Stage != agent.StageFormat {
				t.Errorf("last step stage = %q, want %q", s.Stage, agent.StageFormat)
			}
		})
	}
}
