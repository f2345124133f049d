package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
)

func TestRun_ToolThenAnswer(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_policy_search", `{"query":"年假 结转"}`)},
			Usage: &openai.Usage{PromptTokens: 100, CompletionTokens: 10}},
		openaitest.Reply{Content: "年假可以结转到次年 3 月 31 日。", Usage: &openai.Usage{PromptTokens: 150, CompletionTokens: 20}},
	)
	var log callLog
	res, err := agent.Run(context.Background(), m, testTurn("年假能结转吗？", hrTools(&log)), testOptions())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := res.StopReason, agent.StopFinished; got != want {
		t.Errorf("StopReason = %q, want %q", got, want)
	}
	if got, want := res.Reply, "年假可以结转到次年 3 月 31 日。"; got != want {
		t.Errorf("Reply = %q, want %q", got, want)
	}
	if got, want := log.all(), []string{`hr_policy_search {"query":"年假 结转"}`}; !slices.Equal(got, want) {
		t.Errorf("tool calls = %q, want %q", got, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d requests, want 2", len(reqs))
	}
	second := reqs[1].Messages
	if len(second) != 4 {
		t.Fatalf("second request has %d messages, want system, user, assistant, tool", len(second))
	}
	call, result := second[2], second[3]
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != "call_1" {
		t.Fatalf("assistant message = %+v, want one tool call call_1", call)
	}
	if result.Role != openai.ChatMessageRoleTool || result.ToolCallID != "call_1" || result.Content != "年假可结转至次年 3 月 31 日。" {
		t.Errorf("tool message = role %q id %q content %q", result.Role, result.ToolCallID, result.Content)
	}
	// Tools without triggers are all offered, in the registry's order, then
	// the built-in finish.
	if got, want := toolNames(reqs[0]), []string{"hr_leave_balance", "hr_policy_search", "it_ticket_create", "it_ticket_status"}; !slices.Equal(got, want) {
		t.Errorf("request tools = %q, want %q", got, want)
	}
	if tools := reqs[0].Tools; tools[len(tools)-1].Function.Name != "finish" {
		t.Errorf("last tool = %q, want the built-in finish", tools[len(tools)-1].Function.Name)
	}

	if got, want := stepKinds(res.Steps), []string{"model:", "tool:hr_policy_search", "model:"}; !slices.Equal(got, want) {
		t.Fatalf("steps = %q, want %q", got, want)
	}
	tool := res.Steps[1]
	if tool.N != 1 || tool.CallID != "call_1" || tool.Args != `{"query":"年假 结转"}` || tool.Observation != "年假可结转至次年 3 月 31 日。" {
		t.Errorf("tool step = %+v", tool)
	}
	if s := res.Steps[2]; s.N != 2 || s.PromptTokens != 150 || s.CompletionTokens != 20 || s.Content == "" {
		t.Errorf("final model step = %+v", s)
	}
	if res.PromptTokens != 250 || res.CompletionTokens != 30 {
		t.Errorf("tokens = %d/%d, want 250/30", res.PromptTokens, res.CompletionTokens)
	}
	for _, s := range res.Steps {
		if s.Latency != time.Second || s.At.IsZero() {
			t.Errorf("step %+v: want latency 1s from the injected clock", s)
		}
	}
}

func TestRun_MaxSteps(t *testing.T) {
	srv, m := newModel(t)
	// One reply, repeated: a model that never stops calling tools.
	srv.Script(openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", `{}`)}})
	var log callLog
	opts := testOptions()
	opts.MaxSteps = 3
	opts.MaxRepeats = 10 // only the step budget is under test

	res, err := agent.Run(context.Background(), m, testTurn("我还有几天年假？", hrTools(&log)), opts)
	if err != nil {
		t.Fatalf("Run: %v (a budget stop is not an error)", err)
	}
	if res.StopReason != agent.StopMaxSteps || !errors.Is(res.Cause, agent.ErrMaxSteps) {
		t.Errorf("StopReason = %q (%v), want %q", res.StopReason, res.Cause, agent.StopMaxSteps)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("model calls = %d, want 3", n)
	}
	if n := len(log.all()); n != 3 {
		t.Errorf("tool calls = %d, want 3", n)
	}
	if len(res.Steps) != 6 {
		t.Errorf("steps = %q, want 3 model + 3 tool", stepKinds(res.Steps))
	}
	for _, want := range []string{"限定步骤", "已完成：hr_leave_balance", "未完成：整理最终答复", "停在第 3 步"} {
		if !strings.Contains(res.Reply, want) {
			t.Errorf("Reply = %q, want it to contain %q", res.Reply, want)
		}
	}
}

func TestRun_ToolErrorGoesBackAsText(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", `{}`)}},
		openaitest.Reply{Content: "假期系统暂时不可用。"},
	)
	tools := []skills.Tool{&fakeTool{name: "hr_leave_balance", err: errors.New("skill hr_leave_balance is unavailable (HTTP 502): bad gateway")}}

	res, err := agent.Run(context.Background(), m, testTurn("我还有几天年假？", tools), testOptions())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.StopReason != agent.StopFinished || res.Reply != "假期系统暂时不可用。" {
		t.Errorf("got %q / %q, want the model's answer after the error", res.StopReason, res.Reply)
	}
	// The error is summarised: type, the tool's message, cause, what to
	// change, and a line of guidance.
	got := lastMessage(srv.Requests()[1]).Content
	for _, want := range []string{"error: unavailable: skill hr_leave_balance is unavailable (HTTP 502): bad gateway\n",
		"likely cause: ", "what to change: nothing in the arguments", "You may try once more"} {
		if !strings.Contains(got, want) {
			t.Errorf("tool message = %q, want it to contain %q", got, want)
		}
	}
	if res.Steps[1].Error == "" {
		t.Errorf("tool step %+v: want the error recorded", res.Steps[1])
	}
}

func TestRun_ObservationCapped(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{
			openaitest.ToolCall("big", `{}`), openaitest.ToolCall("failing", `{}`)}},
		openaitest.Reply{Content: "好的"},
	)
	long := strings.Repeat("年", 3000) // 9000 bytes, multi-byte runes
	tools := []skills.Tool{&fakeTool{name: "big", out: long}, &fakeTool{name: "failing", err: errors.New(long)}}
	opts := testOptions()
	opts.MaxObservationBytes = 1000

	if _, err := agent.Run(context.Background(), m, testTurn("x", tools), opts); err != nil {
		t.Fatalf("Run: %v", err)
	}
	msgs := srv.Requests()[1].Messages
	for _, msg := range msgs[len(msgs)-2:] {
		if len(msg.Content) > 1000 || !strings.Contains(msg.Content, "left out") {
			t.Errorf("tool message of %d bytes, want at most 1000 with a note of what was left out", len(msg.Content))
		}
		if !strings.ContainsRune(msg.Content, '年') || strings.ContainsRune(msg.Content, '\uFFFD') {
			t.Errorf("tool message cut inside a rune: %q", msg.Content[len(msg.Content)-60:])
		}
	}
}

func TestRun_BadToolCallsGoBackAsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, tool, args, want string
	}{
		{"UnknownTool", "delete_everything", `{}`, "error: unknown_tool: there is no tool \"delete_everything\"\nwhat to change: call one of the offered tools: hr_leave_balance, hr_policy_search"},
		{"InvalidJSON", "hr_policy_search", `{"query":`, "error: invalid_arguments for hr_policy_search: not valid JSON"},
		{"NotAnObject", "hr_policy_search", `["年假"]`, "error: invalid_arguments for hr_policy_search: the arguments must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, m := newModel(t)
			srv.Script(
				openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall(tc.tool, tc.args)}},
				openaitest.Reply{Content: "抱歉。"},
			)
			var log callLog
			res, err := agent.Run(context.Background(), m, testTurn("x", hrTools(&log)), testOptions())
			if err != nil || res.StopReason != agent.StopFinished {
				t.Fatalf("Run = %q, %v; want the run to go on", res.StopReason, err)
			}
			if calls := log.all(); len(calls) != 0 {
				t.Errorf("tools ran: %q", calls)
			}
			msgs := srv.Requests()[1].Messages
			if got := msgs[len(msgs)-1].Content; !strings.HasPrefix(got, tc.want) {
				t.Errorf("tool message = %q, want prefix %q", got, tc.want)
			}
		})
	}
}

func TestRun_EmptyArgumentsMeanEmptyObject(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", "")}},
		openaitest.Reply{Content: "5 天"})
	var log callLog
	if _, err := agent.Run(context.Background(), m, testTurn("x", hrTools(&log)), testOptions()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := log.all(), []string{"hr_leave_balance {}"}; !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
}

func TestRun_SeveralToolCallsRunInOrder(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{
			openaitest.ToolCall("it_ticket_status", `{"ticket_id":"INC-1001"}`),
			openaitest.ToolCall("hr_leave_balance", `{}`),
		}},
		openaitest.Reply{Content: "都查好了。"},
	)
	var log callLog
	if _, err := agent.Run(context.Background(), m, testTurn("x", hrTools(&log)), testOptions()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := log.all(), []string{`it_ticket_status {"ticket_id":"INC-1001"}`, "hr_leave_balance {}"}; !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	msgs := srv.Requests()[1].Messages
	var ids []string
	for _, msg := range msgs[3:] {
		ids = append(ids, msg.ToolCallID)
	}
	if want := []string{"call_1", "call_2"}; !slices.Equal(ids, want) {
		t.Errorf("tool results answer %q, want %q", ids, want)
	}
}

func TestRun_SystemPromptAndToolsByteStable(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", `{}`)}},
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_policy_search", `{"query":"年假"}`)}},
		openaitest.Reply{Content: "答复"},
	)
	turn := testTurn("我还有几天年假？", hrTools(nil))
	if _, err := agent.Run(context.Background(), m, turn, testOptions()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	raw := srv.RawRequests()
	if len(raw) != 3 {
		t.Fatalf("requests = %d, want 3", len(raw))
	}
	type body struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	var prev body
	for i, r := range raw {
		var b body
		if err := json.Unmarshal(r, &b); err != nil {
			t.Fatal(err)
		}
		var first openai.ChatCompletionMessage
		if err := json.Unmarshal(b.Messages[0], &first); err != nil || first.Role != "system" || !strings.HasPrefix(first.Content, turn.SystemPrompt) {
			t.Errorf("request %d starts with %s, want the system prompt", i, b.Messages[0])
		}
		if i > 0 {
			if !bytes.Equal(b.Tools, prev.Tools) {
				t.Errorf("request %d tools changed:\n%s\n%s", i, prev.Tools, b.Tools)
			}
			// Append-only: every earlier message is repeated byte for byte.
			for j, msg := range prev.Messages {
				if !bytes.Equal(msg, b.Messages[j]) {
					t.Errorf("request %d message %d changed:\n%s\n%s", i, j, msg, b.Messages[j])
				}
			}
		}
		prev = b
	}
}

func TestRun_Timeout(t *testing.T) {
	srv, m := newModel(t)
	// The model never answers; only the run's wall clock ends the call.
	srv.Script(openaitest.Reply{Hook: func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}})
	opts := testOptions()
	opts.Timeout = 50 * time.Millisecond

	res, err := agent.Run(context.Background(), m, testTurn("x", nil), opts)
	if err != nil {
		t.Fatalf("Run: %v (a budget stop is not an error)", err)
	}
	if res.StopReason != agent.StopTimeout || !strings.Contains(res.Reply, "超时") {
		t.Errorf("got %q / %q, want a timeout with a partial reply", res.StopReason, res.Reply)
	}
	if len(res.Steps) != 1 || res.Steps[0].Error == "" {
		t.Errorf("steps = %+v, want the failed model call recorded", res.Steps)
	}
}

func TestRun_Canceled(t *testing.T) {
	srv, m := newModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv.Script(openaitest.Reply{Hook: func(reqCtx context.Context) error {
		cancel() // the gateway shuts down while the model thinks
		<-reqCtx.Done()
		return reqCtx.Err()
	}})
	res, err := agent.Run(ctx, m, testTurn("x", nil), testOptions())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if res.StopReason != agent.StopCanceled {
		t.Errorf("StopReason = %q, want %q", res.StopReason, agent.StopCanceled)
	}
}

func TestRun_ModelError(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", `{}`)}},
		openaitest.Reply{Status: 500, Content: "upstream overloaded"},
	)
	res, err := agent.Run(context.Background(), m, testTurn("x", hrTools(nil)), testOptions())
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 {
		t.Fatalf("err = %v, want a wrapped *openai.APIError with status 500", err)
	}
	if !strings.Contains(err.Error(), "agent: model:") {
		t.Errorf("err = %q, want the agent: model: prefix", err)
	}
	if res.StopReason != agent.StopError || len(res.Steps) != 3 || res.Steps[2].Error == "" {
		t.Errorf("result = %q %q, want StopError with the partial trace", res.StopReason, stepKinds(res.Steps))
	}
	if !strings.Contains(res.Reply, "出错") || !strings.Contains(res.Reply, "已完成：hr_leave_balance") {
		t.Errorf("Reply = %q, want an honest partial answer", res.Reply)
	}
}

func TestRun_MessagesOverride(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", `{}`)}})
	opts := testOptions()
	opts.MaxSteps = 1
	opts.Messages = agent.Messages{MaxSteps: "Sorry, out of steps.", FinalAnswer: "a final answer"}

	res, _ := agent.Run(context.Background(), m, testTurn("x", hrTools(nil)), opts)
	if got, want := res.Reply, "Sorry, out of steps.已完成：hr_leave_balance。未完成：a final answer。停在第 1 步。"; got != want {
		t.Errorf("Reply = %q, want %q", got, want)
	}
}

func TestRun_DuplicateToolNames(t *testing.T) {
	srv, m := newModel(t)
	tools := []skills.Tool{&fakeTool{name: "a"}, &fakeTool{name: "a"}}
	res, err := agent.Run(context.Background(), m, testTurn("x", tools), testOptions())
	if err == nil || res.StopReason != agent.StopError {
		t.Errorf("Run = %q, %v; want an error for duplicate tool names", res.StopReason, err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("model called %d times, want 0", n)
	}
}

func TestNewOpenAIModel_BearerKey(t *testing.T) {
	srv := openaitest.NewServer(t)
	srv.SetAPIKey("sk-right")
	srv.Script(openaitest.Reply{Content: "你好"})
	req := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}

	t.Run("OK", func(t *testing.T) {
		m := agent.NewOpenAIModel(agent.OpenAIConfig{BaseURL: srv.URL(), APIKey: "sk-right", Model: testModel, Timeout: 5 * time.Second})
		resp, err := m.Chat(context.Background(), req)
		if err != nil {
			t.Fatalf("Chat: %v", err)
		}
		if got := resp.Choices[0].Message.Content; got != "你好" {
			t.Errorf("content = %q", got)
		}
		if got := srv.Requests()[0].Model; got != testModel {
			t.Errorf("model = %q, want the configured default %q", got, testModel)
		}
	})
	t.Run("ErrWrongKey", func(t *testing.T) {
		m := agent.NewOpenAIModel(agent.OpenAIConfig{BaseURL: srv.URL(), APIKey: "sk-wrong", Model: testModel})
		_, err := m.Chat(context.Background(), req)
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 401 {
			t.Fatalf("err = %v, want a 401 *openai.APIError", err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "agent: model: ") || strings.Contains(msg, "sk-wrong") {
			t.Errorf("err = %q, want the agent: model: prefix and no key", msg)
		}
	})
}
