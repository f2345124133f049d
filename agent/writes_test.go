package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
)

func TestRun_IdenticalWritesInOneRoundRunOnce(t *testing.T) {
	srv, m := newModel(t)
	args := `{"title":"卡纸","description":"3 楼"}`
	srv.Script(openaitest.Reply{ToolCalls: []openai.ToolCall{
		openaitest.ToolCall("it_ticket_create", args), openaitest.ToolCall("it_ticket_create", args)}},
		answer("已创建 INC-1004"))
	log := &callLog{}
	res, err := agent.Run(context.Background(), m, testTurn("提工单：卡纸", hrTools(log)), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	if got := log.all(); len(got) != 1 {
		t.Errorf("tool ran %d times: %q", len(got), got)
	}
	msgs := srv.Requests()[1].Messages
	if obs := msgs[len(msgs)-1].Content; !strings.HasPrefix(obs, "already done:") {
		t.Errorf("duplicate's observation = %q", obs)
	}
}

func TestRun_ReadOnlyRepeatRunsAgain(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("hr_leave_balance", `{}`), call("hr_leave_balance", `{}`), answer("5 天"))
	log := &callLog{}
	if _, err := agent.Run(context.Background(), m, testTurn("年假", hrTools(log)), testOptions()); err != nil {
		t.Fatal(err)
	}
	if got := log.all(); len(got) != 2 {
		t.Errorf("read-only tool ran %d times, want 2 (MaxRepeats allows it)", len(got))
	}
}

func TestRun_TransientFailureRetryIsNotARepeat(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("search", `{"q":"年假"}`), call("search", `{"q":"年假"}`), answer("找到了"))
	var n atomic.Int32
	tools := []skills.Tool{&fakeTool{name: "search", params: searchParams,
		call: func(context.Context, json.RawMessage) (skills.Result, error) {
			if n.Add(1) == 1 {
				return skills.Result{}, fmt.Errorf("skill search %w (HTTP 503)", skills.ErrUnavailable)
			}
			return skills.Result{Status: 200, ContentType: "application/json", Body: []byte(`{"hits":1}`)}, nil
		}}}
	opts := testOptions()
	opts.MaxRepeats = 1
	res, err := agent.Run(context.Background(), m, testTurn("查年假制度", tools), opts)
	if err != nil || res.StopReason != agent.StopFinished || n.Load() != 2 {
		t.Fatalf("Run = %q, %v after %d calls; want the retry to run and finish", res.StopReason, err, n.Load())
	}
	if !slices.ContainsFunc(srv.Requests()[1].Messages, func(m openai.ChatCompletionMessage) bool {
		return strings.Contains(m.Content, "try once more")
	}) {
		t.Errorf("the model was not told it may retry")
	}
}

// TestRun_ResumedTaskKeepsIndexAndWrites: a task that stopped to ask the
// user keeps, when resumed, the skill index and the writes already done.
func TestRun_ResumedTaskKeepsIndexAndWrites(t *testing.T) {
	log := &callLog{}
	tools := append(indexTools(log),
		&fakeTool{name: "s11_create", write: true, log: log, out: `{"summary":"已创建 REQ-7"}`, contentType: "application/json"},
		&fakeTool{name: "s12_ask", log: log, contentType: "application/json",
			out: `{"requires_followup": true, "question": "装在哪台电脑上？"}`})
	srv, m := newModel(t)
	srv.Script(call("s11_create", `{}`), call("s12_ask", `{}`))
	turn := testTurn("想装个 PS 做图", tools)
	first, err := agent.Run(context.Background(), m, turn, testOptions())
	if err != nil || first.StopReason != agent.StopNeedsInput {
		t.Fatalf("first Run = %q, %v", first.StopReason, err)
	}
	stored, err := json.Marshal(first.Continuation)
	if err != nil {
		t.Fatal(err)
	}
	var cont agent.Continuation
	if err := json.Unmarshal(stored, &cont); err != nil {
		t.Fatal(err)
	}

	srv.Script(call("s11_create", `{}`), answer("已提交 REQ-7"))
	resumed := turn
	resumed.UserText, resumed.Resume, resumed.RunID = "笔记本", &cont, "r2"
	second, err := agent.Run(context.Background(), m, resumed, testOptions())
	if err != nil || second.StopReason != agent.StopFinished {
		t.Fatalf("resumed Run = %q, %v", second.StopReason, err)
	}
	if got := log.all(); !slices.Equal(got, []string{"s11_create {}", "s12_ask {}"}) {
		t.Errorf("calls %q, want the write once", got)
	}
	reqs := srv.Requests()
	if !slices.Contains(toolNames(reqs[len(reqs)-2]), "load_skills") {
		t.Errorf("resumed request lost load_skills: %q", toolNames(reqs[len(reqs)-2]))
	}
	last := reqs[len(reqs)-1].Messages
	if obs := last[len(last)-1].Content; !strings.HasPrefix(obs, "already done:") {
		t.Errorf("repeated write after resuming: %q", obs)
	}
}
