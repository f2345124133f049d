package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
)

func TestRun_MisspeltToolNameCorrected(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("HR-Leave-Balanse", `{}`), answer("你还有 5 天年假。"))
	var log callLog
	res, err := agent.Run(context.Background(), m, testTurn("我还有几天年假？", hrTools(&log)), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	if got, want := log.all(), []string{"hr_leave_balance {}"}; !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	step := res.Steps[1]
	if step.Tool != "hr_leave_balance" || step.RequestedTool != "HR-Leave-Balanse" ||
		!hasDelta(step, "tool name corrected: HR-Leave-Balanse → hr_leave_balance") {
		t.Errorf("tool step = %+v, want the correction recorded", step)
	}
	// The conversation carries the registered name from then on.
	msgs := srv.Requests()[1].Messages
	if got := msgs[len(msgs)-2].ToolCalls[0].Function.Name; got != "hr_leave_balance" {
		t.Errorf("assistant message calls %q, want the corrected name", got)
	}
}

func TestRun_InvalidArgumentsGetOneCorrectedRetry(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		call("it_ticket_status", `{"ticket_id": 1001}`),
		call("it_ticket_status", `{"ticket_id": "INC-1001"}`),
		answer("INC-1001 处理中。"),
	)
	var log callLog
	tools := []skills.Tool{&fakeTool{name: "it_ticket_status", out: `{"status":"处理中"}`, log: &log,
		params: `{"type":"object","properties":{"ticket_id":{"type":"string","pattern":"^INC-[0-9]+$"}},"required":["ticket_id"]}`}}
	opts := testOptions()
	opts.MaxSteps = 2 // the retry must not use a step, or the answer would not fit

	res, err := agent.Run(context.Background(), m, testTurn("INC-1001 到哪了", tools), opts)
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v; want the answer after one free retry", res.StopReason, err)
	}
	if got, want := log.all(), []string{`it_ticket_status {"ticket_id": "INC-1001"}`}; !slices.Equal(got, want) {
		t.Errorf("calls = %q, want only the corrected one %q", got, want)
	}
	feedback := lastMessage(srv.Requests()[1]).Content
	for _, want := range []string{"error: invalid_arguments for it_ticket_status", "expected: ", "must match the regular expression ^INC-[0-9]+$",
		`actual: {"ticket_id": 1001}`, "hint: "} {
		if !strings.Contains(feedback, want) {
			t.Errorf("feedback = %q, want it to contain %q", feedback, want)
		}
	}
	if got := res.Steps[2]; got.Kind != agent.StepModel || got.Retry != 1 {
		t.Errorf("second model step = %+v, want argument retry 1", got)
	}
}

func TestRun_TextFallbackParsesCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		inText  bool // Options.ToolsInText
	}{
		{"FencedJSONInProse", "我来查一下。\n```json\n{\"tool\": \"hr_leave_balance\", \"arguments\": {}}\n```", true},
		{"WholeMessageFenced", "```json\n{\"tool\": \"hr_leave_balance\", \"arguments\": {}}\n```", false},
		{"BareNameArguments", `{"name": "hr_policy_search", "arguments": {"query": "年假"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, m := newModel(t)
			srv.Script(answer(tc.content), answer("查到了。"))
			var log callLog
			opts := testOptions()
			opts.ToolsInText = tc.inText

			res, err := agent.Run(context.Background(), m, testTurn("年假", hrTools(&log)), opts)
			if err != nil || res.StopReason != agent.StopFinished || res.Reply != "查到了。" {
				t.Fatalf("Run = %q %q, %v", res.StopReason, res.Reply, err)
			}
			if calls := log.all(); len(calls) != 1 {
				t.Fatalf("calls = %q, want the call written in the text to run", calls)
			}
			reqs := srv.Requests()
			// Results come back as a user message: an endpoint without
			// native tool calls would reject "tool" messages.
			results := lastMessage(reqs[1])
			if results.Role != openai.ChatMessageRoleUser || !strings.HasPrefix(results.Content, "[tool results]") {
				t.Errorf("results message = %+v", results)
			}
			if tc.inText && (len(reqs[0].Tools) != 0 || !strings.Contains(reqs[0].Messages[0].Content, `{"tool": "<tool name>"`)) {
				t.Errorf("ToolsInText: want no native tools and the call format in the system prompt")
			}
		})
	}
}

// TestRun_JSONInProseIsNotACall: a model with native tool calls quotes a
// JSON object naming an offered tool (echoed from a tool result or from
// the user's message) inside its answer. It is text, never a call.
func TestRun_JSONInProseIsNotACall(t *testing.T) {
	const echoed = "你发来的内容是：{\"tool\": \"hr_leave_balance\", \"arguments\": {}}，这是一个工具调用的示例。"
	srv, m := newModel(t)
	srv.Script(answer(echoed), answer("不该用到"))
	var log callLog
	res, err := agent.Run(context.Background(), m, testTurn("年假", hrTools(&log)), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	if calls := log.all(); len(calls) != 0 {
		t.Errorf("calls = %q: JSON quoted in prose was executed", calls)
	}
	if res.Reply != echoed || len(srv.Requests()) != 1 {
		t.Errorf("reply %q after %d model calls, want the text itself as the answer", res.Reply, len(srv.Requests()))
	}
}

func TestRun_ParallelSafeToolsRunConcurrently(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{
			openaitest.ToolCall("leave", `{}`), openaitest.ToolCall("tickets", `{}`), openaitest.ToolCall("audit", `{}`)}},
		answer("好了"),
	)
	// leave cannot answer before tickets has started and finished: only
	// concurrent execution completes. audit is not parallel-safe and runs
	// after both.
	ticketsDone := make(chan struct{})
	var log callLog
	parallel := func(s *skills.Spec) { s.ParallelSafe = true }
	tools := []skills.Tool{
		&fakeTool{name: "leave", edit: parallel, log: &log, call: func(ctx context.Context, _ json.RawMessage) (skills.Result, error) {
			select {
			case <-ticketsDone:
				return skills.Result{Status: 200, Body: []byte(`{"days":5}`)}, nil
			case <-time.After(5 * time.Second): // a guard against a hang, not synchronisation
				return skills.Result{}, context.DeadlineExceeded
			}
		}},
		&fakeTool{name: "tickets", edit: parallel, log: &log, call: func(context.Context, json.RawMessage) (skills.Result, error) {
			close(ticketsDone)
			return skills.Result{Status: 200, Body: []byte(`{"open":1}`)}, nil
		}},
		&fakeTool{name: "audit", out: `{"ok":true}`, log: &log},
	}
	res, err := agent.Run(context.Background(), m, testTurn("汇总", tools), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	if got := log.all(); len(got) != 3 || got[2] != "audit {}" {
		t.Errorf("calls = %q, want audit last", got)
	}
	// Results in call order, whatever order they finished in.
	msgs := srv.Requests()[1].Messages
	var contents []string
	for _, msg := range msgs[len(msgs)-3:] {
		contents = append(contents, msg.Content)
	}
	if want := []string{`{"days":5}`, `{"open":1}`, `{"ok":true}`}; !slices.Equal(contents, want) {
		t.Errorf("observations = %q, want %q", contents, want)
	}
	if got := stepKinds(res.Steps); !slices.Equal(got, []string{"model:", "tool:leave", "tool:tickets", "tool:audit", "model:"}) {
		t.Errorf("steps = %q", got)
	}
}
