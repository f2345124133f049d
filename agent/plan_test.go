package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/skills"
)

func TestRun_PlanRefusedAfterOneRetry(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(answer("我不知道该怎么做。"), answer(`{"goal": ""}`), answer("never"))
	opts := testOptions()
	opts.Plan = true

	res, err := agent.Run(context.Background(), m, testTurn("嗯……那个", hrTools(nil)), opts)
	if err != nil {
		t.Fatalf("Run: %v (a refusal is a reply)", err)
	}
	if res.StopReason != agent.StopPlanRefused || !errors.Is(res.Cause, agent.ErrPlanRefused) {
		t.Fatalf("stop = %q (%v), want %q", res.StopReason, res.Cause, agent.StopPlanRefused)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want the plan and one retry", len(reqs))
	}
	if len(reqs[0].Tools) != 0 || !strings.Contains(reqs[0].Messages[0].Content, `"output_format"`) {
		t.Errorf("plan request = %+v, want the plan prompt and no tools", reqs[0].Messages[0])
	}
	if got := lastMessage(reqs[1]).Content; !strings.Contains(got, "no JSON object found") {
		t.Errorf("retry message = %q, want what was wrong", got)
	}
	if !strings.HasPrefix(res.Reply, "抱歉，我没能理解这个请求") {
		t.Errorf("Reply = %q, want the plan refusal", res.Reply)
	}
	for _, s := range res.Steps {
		if s.Stage != agent.StagePlan {
			t.Errorf("step %+v, want only plan steps", s)
		}
	}
}

func TestRun_PlanSubtasksFailedOneRecordedOthersContinue(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		answer("```json\n"+`{"goal": "查工资条和年假", "constraints": ["本人数据"], "output_format": "编号列表", "subtasks": ["查上月工资条", "查年假余额"]}`+"\n```"),
		call("finish", `{"answer": "工资系统维护中，查不到工资条", "status": "failed"}`), // subtask 1
		call("hr_leave_balance", `{}`), // subtask 2
		answer("年假还剩 5 天"),
		answer("1. 工资条：系统维护中，暂时查不到\n2. 年假：还剩 5 天"), // composition
	)
	var log callLog
	opts := testOptions()
	opts.Plan = true

	res, err := agent.Run(context.Background(), m, testTurn("帮我查上月工资条，再看看年假还剩几天", hrTools(&log)), opts)
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q %q, %v", res.StopReason, res.Reply, err)
	}
	if res.Plan == nil || len(res.Plan.Subtasks) != 2 || res.Plan.OutputFormat != "编号列表" {
		t.Fatalf("Plan = %+v", res.Plan)
	}
	want := []agent.SubtaskResult{
		{Task: "查上月工资条", Status: agent.SubtaskFailed, Answer: "工资系统维护中，查不到工资条", Reason: "工资系统维护中，查不到工资条"},
		{Task: "查年假余额", Status: agent.SubtaskDone, Answer: "年假还剩 5 天"},
	}
	if !slices.Equal(res.Subtasks, want) {
		t.Errorf("Subtasks = %+v, want %+v", res.Subtasks, want)
	}
	if res.Reply != "1. 工资条：系统维护中，暂时查不到\n2. 年假：还剩 5 天" {
		t.Errorf("Reply = %q", res.Reply)
	}
	reqs := srv.Requests()
	if sys := reqs[1].Messages[0].Content; !strings.Contains(sys, "<TASK>\nGoal: 查工资条和年假") || !strings.Contains(sys, "2. 查年假余额") {
		t.Errorf("system prompt lacks the plan: %q", sys)
	}
	if got := lastMessage(reqs[2]).Content; !strings.Contains(got, "Subtask 2/2: 查年假余额") {
		t.Errorf("subtask 2 start = %q", got)
	}
	compose := lastMessage(reqs[4]).Content
	for _, w := range []string{"FAILED", "done: 年假还剩 5 天", "编号列表"} {
		if !strings.Contains(compose, w) {
			t.Errorf("composition request = %q, want it to contain %q", compose, w)
		}
	}
	if s := res.Steps[len(res.Steps)-1]; s.Stage != agent.StageCompose {
		t.Errorf("last step stage = %q, want compose", s.Stage)
	}
}

func TestRun_PlanSubtaskBudgetFailsOnlyThatSubtask(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		answer(`{"goal": "两件事", "subtasks": ["查工单", "查年假"]}`),
		call("it_ticket_status", `{"ticket_id": "INC-1"}`),
		call("it_ticket_status", `{"ticket_id": "INC-2"}`), // subtask 1 runs out of steps
		call("hr_leave_balance", `{}`),
		answer("年假 5 天"),
		answer("工单没查到；年假 5 天。"),
	)
	opts := testOptions()
	opts.Plan = true
	opts.MaxSteps = 2
	tools := []skills.Tool{
		&fakeTool{name: "it_ticket_status", out: `{"status":"?"}`, params: `{"type":"object","properties":{"ticket_id":{"type":"string"}}}`},
		&fakeTool{name: "hr_leave_balance", out: `{"remaining_days":5}`},
	}
	res, err := agent.Run(context.Background(), m, testTurn("查工单和年假", tools), opts)
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q %q, %v", res.StopReason, res.Reply, err)
	}
	if len(res.Subtasks) != 2 || res.Subtasks[0].Status != agent.SubtaskFailed || res.Subtasks[0].Reason != agent.StopMaxSteps ||
		res.Subtasks[1].Status != agent.SubtaskDone {
		t.Errorf("Subtasks = %+v", res.Subtasks)
	}
}
