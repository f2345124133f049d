package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/skills"
)

// Answers checked against what ran (issue #22, items 4-6).

// leaveApply is a write skill the model may claim to have called.
func leaveApply(log *callLog) skills.Tool {
	return &fakeTool{name: "hr_leave_apply", out: `{"request_id":"L-302"}`, log: log, write: true,
		params: `{"type":"object","properties":{"start_date":{"type":"string"}},"required":["start_date"]}`,
		edit:   func(s *skills.Spec) { s.DisplayName = "请假申请"; s.Description = "提交请假申请" }}
}

func TestRun_ClaimedWriteThatNeverRan(t *testing.T) {
	d := agent.DefaultMessages()
	t.Run("Corrected", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(answer("已为你提交请假申请。"), answer("还没有提交。请告诉我请假的开始日期。"))
		log := &callLog{}
		res, err := agent.Run(context.Background(), m, testTurn("帮我请下周五的假", append(hrTools(log), leaveApply(log))), testOptions())
		if err != nil || res.StopReason != agent.StopFinished {
			t.Fatalf("Run = %q, %v", res.StopReason, err)
		}
		if res.Reply != "还没有提交。请告诉我请假的开始日期。" {
			t.Errorf("reply = %q, want the corrected answer", res.Reply)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model calls, want 2", len(reqs))
		}
		if got := lastMessage(reqs[1]).Content; !strings.Contains(got, "no tool call") {
			t.Errorf("the model was told %q, want that no such call happened", got)
		}
		if len(log.all()) != 0 {
			t.Errorf("tools ran: %q", log.all())
		}
	})
	t.Run("HonestWhenRepeated", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(answer("已为你提交请假申请"), answer("好的，已为你提交请假申请，请等待审批。"))
		res, err := agent.Run(context.Background(), m, testTurn("帮我请下周五的假", append(hrTools(nil), leaveApply(nil))), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply != d.NotPerformed {
			t.Errorf("reply = %q, want %q", res.Reply, d.NotPerformed)
		}
		if strings.Contains(res.Reply, "已为你提交") {
			t.Errorf("the false claim reached the user")
		}
	})
	t.Run("RealWriteKept", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(call("hr_leave_apply", `{"start_date":"2026-12-04"}`), answer("已为你提交请假申请，单号 L-302。"))
		log := &callLog{}
		res, err := agent.Run(context.Background(), m, testTurn("帮我请下周五的假", append(hrTools(log), leaveApply(log))), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply != "已为你提交请假申请，单号 L-302。" || len(srv.Requests()) != 2 {
			t.Errorf("reply = %q after %d calls, want the answer as is", res.Reply, len(srv.Requests()))
		}
	})
	t.Run("CitedResultNoToolReturned", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(answer("根据系统查询结果，你还有 5 天年假。"), answer("根据系统查询结果，你还有 5 天年假。"))
		res, err := agent.Run(context.Background(), m, testTurn("我还有几天年假", hrTools(nil)), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply != d.NoResult {
			t.Errorf("reply = %q, want %q", res.Reply, d.NoResult)
		}
	})
}

// attendance answers with the caller's own record, whoever is named.
func attendance(log *callLog) skills.Tool {
	return &fakeTool{name: "hr_attendance", out: `{"employee_id":"zhangsan","month":"2026-12","late":0}`, contentType: "application/json",
		log: log, edit: func(s *skills.Spec) { s.DisplayName = "考勤查询"; s.Description = "查询提问者本人的考勤" }}
}

func TestRun_ColleaguesDataNotRelabeled(t *testing.T) {
	t.Run("Stubborn", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(call("hr_attendance", `{}`), answer("李经理这个月迟到 0 次。"), answer("李经理这个月迟到 0 次。"))
		res, err := agent.Run(context.Background(), m, testTurn("帮我看看李经理这个月的考勤", []skills.Tool{attendance(nil)}), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(agent.DefaultMessages().OwnDataOnly, "李经理"); res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
		obs := srv.Requests()[1].Messages
		if got := obs[len(obs)-1].Content; !strings.Contains(got, "caller's own") {
			t.Errorf("observation %q does not say whose record it is", got)
		}
	})
	t.Run("Corrected", func(t *testing.T) {
		// A skill that does not say it is personal runs; the answer check
		// still catches the relabeling (a personal one is not run at all:
		// whose_test.go).
		srv, m := newModel(t)
		corrected := "我只能查看你本人的考勤：你这个月迟到 0 次。"
		srv.Script(call("hr_attendance", `{}`), answer("李经理这个月迟到 0 次。"), answer(corrected))
		unmarked := &fakeTool{name: "hr_attendance", out: `{"employee_id":"zhangsan","late":0}`, contentType: "application/json",
			edit: func(s *skills.Spec) { s.DisplayName = "考勤查询"; s.Description = "查询考勤" }}
		res, err := agent.Run(context.Background(), m, testTurn("帮我看看李经理这个月的考勤", []skills.Tool{unmarked}), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply != corrected {
			t.Errorf("reply = %q, want %q", res.Reply, corrected)
		}
	})
	t.Run("SkillAboutThatPerson", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(call("hr_directory_lookup", `{"name":"李娜"}`), answer("李娜的分机号是 8001。"))
		dir := &fakeTool{name: "hr_directory_lookup", out: `{"name":"李娜","ext":"8001"}`,
			params: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`}
		res, err := agent.Run(context.Background(), m, testTurn("财务部李娜的分机号多少", []skills.Tool{dir}), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply != "李娜的分机号是 8001。" || len(srv.Requests()) != 2 {
			t.Errorf("reply = %q after %d calls, want the answer as is", res.Reply, len(srv.Requests()))
		}
	})
}

func TestRun_TransientFailureAfterArgumentRetriesIsRetried(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("search", `{}`), call("search", `{}`), call("search", `{"q":"年假"}`), call("search", `{"q":"年假"}`), answer("找到了"))
	var n atomic.Int32
	tools := []skills.Tool{&fakeTool{name: "search", params: searchParams,
		call: func(context.Context, json.RawMessage) (skills.Result, error) {
			if n.Add(1) == 1 {
				return skills.Result{}, fmt.Errorf("skill search %w (HTTP 503)", skills.ErrUnavailable)
			}
			return skills.Result{Status: 200, ContentType: "application/json", Body: []byte(`{"hits":1}`)}, nil
		}}}
	res, err := agent.Run(context.Background(), m, testTurn("搜一下年假", tools), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q (%q), %v; want the promised retry, then the answer", res.StopReason, res.Reply, err)
	}
	if n.Load() != 2 {
		t.Errorf("skill ran %d times, want 2", n.Load())
	}
}

func TestRun_LoadSkillsSaysWithdrawn(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("vpn_status", `{}`), call("vpn_status", `{}`), call("load_skills", `{"names":["vpn_status"]}`), answer("VPN 系统暂时不可用"))
	vpn := &fakeTool{name: "vpn_status", err: fmt.Errorf("skill vpn %w (HTTP 503)", skills.ErrUnavailable),
		edit: func(s *skills.Spec) { s.DisplayName = "VPN状态"; s.Synonyms = []string{"VPN"} }}
	opts := testOptions()
	opts.MaxTools = 1
	res, err := agent.Run(context.Background(), m, testTurn("VPN 状态怎么样", append(hrTools(nil), vpn)), opts)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, s := range res.Steps {
		if s.Tool == "load_skills" {
			got = s.Observation
		}
	}
	if strings.Contains(got, "already available") || !strings.Contains(got, "withdrawn") {
		t.Errorf("load_skills of a withdrawn skill answered %q", got)
	}
}

func TestRun_PartialAnswerShowsValuesNotFieldNames(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("it_ticket_create", `{"title":"卡纸","description":"3 楼"}`), call("hr_leave_balance", `{}`))
	log := &callLog{}
	opts := testOptions()
	opts.MaxSteps = 2
	res, err := agent.Run(context.Background(), m, testTurn("打印机卡纸，提个工单", hrTools(log)), opts)
	if err != nil || res.StopReason != agent.StopMaxSteps {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	if !strings.Contains(res.Reply, "INC-1004") || strings.Contains(res.Reply, "ticket_id") {
		t.Errorf("partial answer %q: want the ticket number without its field name", res.Reply)
	}
}
