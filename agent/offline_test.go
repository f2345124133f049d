package agent_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

func TestOfflineModel_LeaveQuestion(t *testing.T) {
	var log callLog
	res, err := agent.Run(context.Background(), agent.OfflineModel{}, testTurn("我还有几天年假？", hrTools(&log)), testOptions())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := stepKinds(res.Steps), []string{"model:", "tool:hr_leave_balance", "model:"}; !slices.Equal(got, want) {
		t.Fatalf("steps = %q, want %q", got, want)
	}
	if got, want := log.all(), []string{"hr_leave_balance {}"}; !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	if res.Steps[1].CallID != "call_1" {
		t.Errorf("call id = %q, want call_1", res.Steps[1].CallID)
	}
	for _, want := range []string{"离线演示模型", "hr_leave_balance", `{"remaining_days":5}`} {
		if !strings.Contains(res.Reply, want) {
			t.Errorf("Reply = %q, want it to contain %q", res.Reply, want)
		}
	}
}

func TestOfflineModel_Chat(t *testing.T) {
	tools := toolDefs(hrTools(nil))
	for _, tc := range []struct {
		name, text string
		wantTool   string // "" when a text answer is expected
		wantArgs   string
		wantText   []string
	}{
		{name: "Leave", text: "我还有几天年假？", wantTool: "hr_leave_balance", wantArgs: `{}`},
		{name: "Policy", text: "年假制度是怎样的？", wantTool: "hr_policy_search", wantArgs: `{"query":"年假制度是怎样的？"}`},
		{name: "TicketStatus", text: "查一下工单 inc-1001 的进度", wantTool: "it_ticket_status", wantArgs: `{"ticket_id":"INC-1001"}`},
		{name: "TicketCreate", text: "帮我提个工单：笔记本连不上 VPN", wantTool: "it_ticket_create",
			wantArgs: `{"description":"帮我提个工单：笔记本连不上 VPN","title":"笔记本连不上 VPN"}`},
		{name: "MissingTicketID", text: "我的工单进度怎么样了", wantText: []string{"离线演示模型", "it_ticket_status", "ticket_id"}},
		{name: "NoMatch", text: "今天天气怎么样", wantText: []string{"离线演示模型", "hr_leave_balance", "it_ticket_create"}},
		{name: "NoPayslipTool", text: "我的工资条", wantText: []string{"离线演示模型", "可用的工具"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := openai.ChatCompletionRequest{Tools: tools, Messages: []openai.ChatCompletionMessage{
				{Role: "system", Content: "sys"}, {Role: "user", Content: tc.text}}}
			resp, err := agent.OfflineModel{}.Chat(context.Background(), req)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			again, _ := agent.OfflineModel{}.Chat(context.Background(), req)
			if !reflect.DeepEqual(resp, again) {
				t.Errorf("not deterministic:\n%+v\n%+v", resp, again)
			}
			choice := resp.Choices[0]
			if tc.wantTool == "" {
				if choice.FinishReason != openai.FinishReasonStop || len(choice.Message.ToolCalls) != 0 {
					t.Fatalf("got %+v, want a text answer", choice)
				}
				for _, want := range tc.wantText {
					if !strings.Contains(choice.Message.Content, want) {
						t.Errorf("content = %q, want it to contain %q", choice.Message.Content, want)
					}
				}
				return
			}
			if choice.FinishReason != openai.FinishReasonToolCalls || len(choice.Message.ToolCalls) != 1 {
				t.Fatalf("got %+v, want one tool call", choice)
			}
			call := choice.Message.ToolCalls[0]
			if call.ID != "call_1" || call.Type != openai.ToolTypeFunction || call.Function.Name != tc.wantTool || call.Function.Arguments != tc.wantArgs {
				t.Errorf("call = %+v, want %s(%s)", call, tc.wantTool, tc.wantArgs)
			}
		})
	}
}

// TestOfflineDemo_EndToEnd runs what `hermes demo` runs: the sample skills
// against the demo backend, driven by the offline model, for one verified
// user. The backend must see that user, signed.
func TestOfflineDemo_EndToEnd(t *testing.T) {
	key := []byte("demo-key")
	now := func() time.Time { return time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC) }
	backend := demobackend.New(key, now)
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)

	defs, err := skills.LoadDir(skills.SamplesFS())
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	reg, err := skills.NewRegistry(defs, skills.Options{BaseURL: srv.URL, Now: now,
		Getenv: func(k string) string {
			return map[string]string{skills.SampleHRKeyEnv: string(key), skills.SampleITKeyEnv: string(key)}[k]
		}})
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	caller := skills.Caller{UserID: "zhangsan", Name: "张三", Channel: "console", TraceID: "r1"}
	turn := testTurn("我还有几天年假？", reg.ToolsFor(caller))

	res, err := agent.Run(context.Background(), agent.OfflineModel{}, turn, testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	for _, want := range []string{"离线演示模型", "张三 2026 年年假共 10 天，已用 5 天，剩余 5 天"} {
		if !strings.Contains(res.Reply, want) {
			t.Errorf("Reply = %q, want it to contain %q", res.Reply, want)
		}
	}
	calls := backend.Calls()
	if len(calls) != 1 || calls[0].Identity.UserID != "zhangsan" || calls[0].RequestID != "r1" {
		t.Errorf("backend calls = %+v, want one signed call for zhangsan", calls)
	}
}

// toolDefs builds the request's tool list the way Run does.
func toolDefs(tools []skills.Tool) []openai.Tool {
	var defs []openai.Tool
	for _, t := range tools {
		s := t.Spec()
		defs = append(defs, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: s.Name, Description: s.Description, Parameters: json.RawMessage(s.Parameters)}})
	}
	return defs
}
