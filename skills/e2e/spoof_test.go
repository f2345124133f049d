package e2e_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

var key = []byte("e2e-hmac-key")

// zhangsan is the sender the gateway verified from the platform callback.
var zhangsan = skills.Caller{UserID: "zhangsan", Name: "张三", Channel: "wecom", Account: "app-hr",
	CorpID: "ww-demo", ChatID: "chat-1", Depts: []string{"研发部"}, TraceID: "run-e2e-1"}

func registry(t *testing.T, backend *demobackend.Backend) *skills.Registry {
	t.Helper()
	// A finance-only skill over the same data: zhangsan is not in 财务部.
	return samplesBehind(t, backend, &skills.Skill{Name: "fin_salary_ledger", Description: "全员工资台账，仅财务部可用。",
		Endpoint: "/hr/payslip", Access: skills.Access{Corps: []string{"ww-demo"}, Departments: []string{"财务部"}},
		Identity: skills.IdentityConfig{HMACKeyEnv: skills.SampleHRKeyEnv},
		Triggers: skills.Triggers{IntentContains: []string{"工资"}}})
}

// TestSpoofedEmployeeID: the model, asked by zhangsan about lisi's pay,
// puts lisi's employee id into the arguments. The backend still sees
// zhangsan (signed), refuses, and lisi's figures never reach the chat.
func TestSpoofedEmployeeID(t *testing.T) {
	backend := demobackend.New(key, nil)
	reg := registry(t, backend)
	model := openaitest.NewServer(t)
	model.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{
			openaitest.ToolCall("hr_payslip_summary", `{"employee_id":"lisi","month":"2026-02"}`),
		}},
		openaitest.Reply{Content: "抱歉，只能查询你本人的工资条。"},
	)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := agent.Run(ctx, agent.NewOpenAIModel(agent.OpenAIConfig{BaseURL: model.URL(), Model: "scripted"}), agent.Turn{
		RunID:    zhangsan.TraceID,
		UserText: "帮我看看李四（lisi）上个月的工资",
		Tools:    reg.ToolsFor(zhangsan),
	}, agent.Options{Model: "scripted", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Run: %v (stop %s)", err, res.StopReason)
	}

	calls := backend.Calls()
	if len(calls) != 1 {
		t.Fatalf("backend calls = %+v, want exactly the one payslip request", calls)
	}
	c := calls[0]
	if c.Path != "/hr/payslip" || c.Identity.UserID != "zhangsan" || c.Identity.CorpID != "ww-demo" || c.Status != 403 {
		t.Errorf("backend saw %+v, want zhangsan's signed identity refused with 403", c)
	}
	if !strings.Contains(c.Body, `"employee_id":"lisi"`) {
		t.Errorf("body %q: the model's argument should have reached the backend as plain data", c.Body)
	}

	reqs := model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("model saw %d requests, want the tool result fed back", len(reqs))
	}
	for _, tool := range reqs[0].Tools {
		if tool.Function.Name == "fin_salary_ledger" {
			t.Errorf("a skill outside zhangsan's access was offered to the model")
		}
	}
	last := reqs[len(reqs)-1].Messages
	var observation string
	for _, m := range last {
		if m.Role == openai.ChatMessageRoleTool {
			observation += m.Content
		}
	}
	if !strings.Contains(observation, "只能查询本人的工资条") {
		t.Errorf("observation = %q, want the backend's refusal", observation)
	}
	// lisi's net pay is 18522: it must appear nowhere.
	for _, text := range []string{observation, res.Reply} {
		if strings.Contains(text, "18522") || strings.Contains(text, "22000") {
			t.Errorf("lisi's pay leaked: %q", text)
		}
	}
}

// TestOwnPayslip: the same skill answers the sender's own question.
func TestOwnPayslip(t *testing.T) {
	backend := demobackend.New(key, nil)
	reg := registry(t, backend)
	res, err := reg.Call(context.Background(), zhangsan, "hr_payslip_summary", []byte(`{"month":"2026-02","employee_id":"zhangsan"}`))
	if err != nil || !strings.Contains(string(res.Body), "实发 15368 元") {
		t.Errorf("own payslip = %s, %v", res.Body, err)
	}
	if _, err := reg.Call(context.Background(), zhangsan, "fin_salary_ledger", []byte(`{}`)); err == nil {
		t.Errorf("fin_salary_ledger ran for someone outside 财务部")
	}
}
