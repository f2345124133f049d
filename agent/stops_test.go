package agent_test

import (
	"context"
	"encoding/json"
	"errors"
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

const searchParams = `{"type":"object","properties":{"q":{"type":"string"},"page":{"type":"integer"}},"required":["q"]}`

func TestRun_RepeatedCallStoppedAtLimit(t *testing.T) {
	srv, m := newModel(t)
	// The same call three times, written differently: key order and spaces
	// do not make it a different call.
	srv.Script(
		call("search", `{"q":"年假","page":1}`),
		call("search", `{ "page": 1, "q": "年假" }`),
		call("search", `{"q":"年假","page":1}`),
		answer("never reached"),
	)
	var log callLog
	tools := []skills.Tool{&fakeTool{name: "search", params: searchParams, out: `{"hits":[]}`, log: &log}}

	res, err := agent.Run(context.Background(), m, testTurn("查年假制度", tools), testOptions())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.StopReason != agent.StopRepeated || !errors.Is(res.Cause, agent.ErrRepeatedCall) {
		t.Fatalf("stop = %q (%v), want %q", res.StopReason, res.Cause, agent.StopRepeated)
	}
	if n := len(log.all()); n != 2 {
		t.Errorf("tool ran %d times, want 2 (MaxRepeats); the third identical call must not run", n)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("model calls = %d, want 3", n)
	}
	for _, want := range []string{"重复同一个查询", "已完成：search", "停在第 3 步"} {
		if !strings.Contains(res.Reply, want) {
			t.Errorf("Reply = %q, want it to contain %q", res.Reply, want)
		}
	}
}

func TestRun_ImpossibleTaskEndsWithinBudget(t *testing.T) {
	srv, m := newModel(t)
	// A model that never gives up: a new query every time.
	var n atomic.Int32
	srv.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		return call("search", fmt.Sprintf(`{"q":"a.md 第 %d 版"}`, n.Add(1)))
	})
	notFound := fmt.Errorf("skill search %w (HTTP 404): %w", skills.ErrRefused, &skills.HTTPError{Status: 404, Body: "no such file"})
	tools := []skills.Tool{&fakeTool{name: "search", params: searchParams, err: notFound}}
	opts := testOptions()
	opts.MaxSteps = 20 // the idle limit, not the step budget, must end it

	res, err := agent.Run(context.Background(), m, testTurn("把不存在的文件 a.md 改写成 b.md", tools), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.StopReason != agent.StopIdle || !errors.Is(res.Cause, agent.ErrIdle) {
		t.Fatalf("stop = %q (%v), want %q", res.StopReason, res.Cause, agent.StopIdle)
	}
	if got := len(srv.Requests()); got != agent.DefaultMaxIdleRounds {
		t.Errorf("model calls = %d, want %d idle rounds", got, agent.DefaultMaxIdleRounds)
	}
	for _, want := range []string{"没有拿到有效结果", "失败：search（请求被拒绝）", "未完成：整理最终答复", "停在第 3 步"} {
		if !strings.Contains(res.Reply, want) {
			t.Errorf("Reply = %q, want it to contain %q", res.Reply, want)
		}
	}
	// The model was told why, with the 404's own hint.
	if got := lastMessage(srv.Requests()[1]).Content; !strings.Contains(got, "does not exist") || !strings.Contains(got, "error: refused") {
		t.Errorf("observation = %q, want a refused error with the 404 hint", got)
	}
}

func TestRun_FatalToolErrorStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Misconfigured", fmt.Errorf("skill payslip %w: auth.token_env: environment variable PAY_TOKEN is not set", skills.ErrMisconfigured)},
		{"HTTP401", fmt.Errorf("skill payslip %w: %w", skills.ErrRefused, &skills.HTTPError{Status: 401, Body: "bad token"})},
		{"HTTP401Text", fmt.Errorf("skill payslip %w (HTTP 401): unauthorized", skills.ErrRefused)},
		{"AgentSentinel", fmt.Errorf("ledger locked for audit: %w", agent.ErrFatalTool)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, m := newModel(t)
			srv.Script(call("payslip", `{}`), call("other", `{}`), answer("never"))
			var log callLog
			tools := []skills.Tool{&fakeTool{name: "payslip", err: tc.err, log: &log}, &fakeTool{name: "other", log: &log}}

			res, err := agent.Run(context.Background(), m, testTurn("我的工资条", tools), testOptions())
			if err != nil {
				t.Fatalf("Run: %v (a fatal tool error is a reply, not a retry)", err)
			}
			if res.StopReason != agent.StopFatalTool || !errors.Is(res.Cause, agent.ErrFatalTool) {
				t.Fatalf("stop = %q (%v), want %q", res.StopReason, res.Cause, agent.StopFatalTool)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("model calls = %d, want 1: nothing after a fatal error", n)
			}
			if !strings.Contains(res.Reply, "配置或授权") || !strings.Contains(res.Reply, "payslip（配置或授权有误）") {
				t.Errorf("Reply = %q", res.Reply)
			}
		})
	}
}

func TestRun_UnavailableToolWithdrawnAfterTwoFailures(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		call("payslip", `{"month":"1"}`),
		call("payslip", `{"month":"2"}`),
		answer("工资系统暂时不可用。"),
	)
	down := fmt.Errorf("skill payslip %w (HTTP 503): %w", skills.ErrUnavailable, &skills.HTTPError{Status: 503, Body: "maintenance"})
	tools := []skills.Tool{&fakeTool{name: "payslip", err: down}, &fakeTool{name: "hr_leave_balance"}}

	res, err := agent.Run(context.Background(), m, testTurn("我的工资条", tools), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	reqs := srv.Requests()
	if got := toolNames(reqs[1]); !slices.Contains(got, "payslip") {
		t.Errorf("after one failure tools = %q, want payslip still offered", got)
	}
	if got := toolNames(reqs[2]); slices.Contains(got, "payslip") || !slices.Contains(got, "hr_leave_balance") {
		t.Errorf("after two failures tools = %q, want payslip withdrawn", got)
	}
	if obs := lastMessage(reqs[2]).Content; !strings.Contains(obs, "withdrawn for the rest of this conversation") {
		t.Errorf("observation = %q, want the model told of the withdrawal", obs)
	}
	if !anyDelta(res.Steps, "tools withdrawn: payslip") {
		t.Errorf("no step records the withdrawal: %+v", res.Steps)
	}
}

func TestRun_AsyncWorkContinuesTheLoop(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("report", `{}`), answer("报表已开始生成，完成后会发到群里。"))
	tools := []skills.Tool{&fakeTool{name: "report", call: func(context.Context, json.RawMessage) (skills.Result, error) {
		return skills.Result{Status: 202, Async: &skills.AsyncTask{TaskID: "T-42"}}, nil
	}}}
	res, err := agent.Run(context.Background(), m, testTurn("生成上月考勤报表", tools), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	obs := lastMessage(srv.Requests()[1]).Content
	if !strings.Contains(obs, "T-42") || !strings.Contains(obs, "sent to this chat later") {
		t.Errorf("observation = %q, want the task id and that the result comes later", obs)
	}
	if want := []agent.AsyncStarted{{Tool: "report", TaskID: "T-42"}}; !slices.Equal(res.AsyncTasks, want) {
		t.Errorf("AsyncTasks = %+v, want %+v", res.AsyncTasks, want)
	}
}

func TestStopSentinel_DistinctPerReason(t *testing.T) {
	reasons := []string{agent.StopMaxSteps, agent.StopTimeout, agent.StopRepeated, agent.StopIdle, agent.StopFatalTool,
		agent.StopNeedsInput, agent.StopAwaitingConfirmation, agent.StopPlanRefused, agent.StopError, agent.StopCanceled}
	seen := map[error]string{}
	for _, r := range reasons {
		s := agent.StopSentinel(r)
		if s == nil {
			t.Errorf("%s has no sentinel", r)
			continue
		}
		if other, dup := seen[s]; dup {
			t.Errorf("%s and %s share a sentinel", r, other)
		}
		seen[s] = r
	}
	if agent.StopSentinel(agent.StopFinished) != nil {
		t.Errorf("finished has a sentinel; it is not a failure")
	}
}
