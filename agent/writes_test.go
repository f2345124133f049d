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
