package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
)

// Whose data a reply shows (issue #37 item 1).

// strictAttendance is a personal skill whose schema admits no other
// argument: the subject must be gone before it is checked.
func strictAttendance(log *callLog) skills.Tool {
	return &fakeTool{name: "hr_attendance", out: `{"employee_id":"zhangsan","month":"2026-12","late":0}`, contentType: "application/json",
		log: log, params: `{"type":"object","properties":{"month":{"type":"string"}},"additionalProperties":false}`,
		edit: func(s *skills.Spec) { s.DisplayName = "考勤查询"; s.Description = "查询提问者本人的考勤" }}
}

func TestRun_WhoseData(t *testing.T) {
	d := agent.DefaultMessages()
	run := func(t *testing.T, text string, script ...any) (agent.Result, *callLog, []string) {
		t.Helper()
		srv, m := newModel(t)
		var replies []openaitest.Reply
		for _, s := range script {
			switch s := s.(type) {
			case [2]string:
				replies = append(replies, call(s[0], s[1]))
			case string:
				replies = append(replies, answer(s))
			}
		}
		srv.Script(replies...)
		log := &callLog{}
		res, err := agent.Run(context.Background(), m, testTurn(text, []skills.Tool{strictAttendance(log)}), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		var defs []string
		for _, tool := range srv.Requests()[0].Tools {
			b, _ := json.Marshal(tool.Function.Parameters)
			defs = append(defs, tool.Function.Name+" "+string(b))
		}
		return res, log, defs
	}
	t.Run("SubjectArgumentOffered", func(t *testing.T) {
		_, _, defs := run(t, "我这个月考勤怎么样", "好的")
		if len(defs) == 0 || !strings.Contains(defs[0], `"subject"`) || !strings.Contains(defs[0], `"required":["subject"]`) {
			t.Errorf("definition = %v, want a required subject argument", defs)
		}
	})
	t.Run("NameTheTextCheckMisses", func(t *testing.T) {
		// A bare given name: only the model's subject says who it is. The
		// adversarial answer words the caller's record as 建国's.
		res, log, _ := run(t, "帮我看看建国这个月的考勤",
			[2]string{"hr_attendance", `{"subject":"建国"}`}, "建国这个月迟到 0 次。")
		if len(log.all()) != 0 {
			t.Errorf("the skill ran for someone else: %q", log.all())
		}
		if want := fmt.Sprintf(d.OwnDataOnly, "建国"); res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
	})
	t.Run("ModelSaysSelfTheTextSaysOther", func(t *testing.T) {
		res, log, _ := run(t, "老李这个月的考勤怎么样",
			[2]string{"hr_attendance", `{"subject":"self"}`}, "老李这个月迟到 0 次。")
		if len(log.all()) != 0 {
			t.Errorf("the skill ran for someone else: %q", log.all())
		}
		if want := fmt.Sprintf(d.OwnDataOnly, "老李"); res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
	})
	t.Run("TitleOfTheAsker", func(t *testing.T) {
		res, log, _ := run(t, "查下我们经理这个月的考勤",
			[2]string{"hr_attendance", `{"subject":"我们经理"}`}, "经理这个月迟到 0 次。")
		if len(log.all()) != 0 || !strings.HasPrefix(res.Reply, "我只能查看你本人的数据") {
			t.Errorf("reply = %q after calls %q, want the refusal and no call", res.Reply, log.all())
		}
	})
	t.Run("SelfLabeled", func(t *testing.T) {
		res, log, _ := run(t, "我这个月迟到了几次",
			[2]string{"hr_attendance", `{"subject":"self","month":"2026-12"}`}, "这个月迟到 0 次。")
		if got := log.all(); len(got) != 1 || got[0] != `hr_attendance {"month":"2026-12"}` {
			t.Errorf("calls = %q, want one without the subject argument", got)
		}
		if want := fmt.Sprintf(d.OwnDataLabel, "考勤查询") + "\n这个月迟到 0 次。"; res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
	})
	t.Run("SelfAlreadySaysWhose", func(t *testing.T) {
		for _, said := range []string{"你本人这个月迟到 0 次。", "你这个月迟到 0 次。", "您这个月迟到 0 次。"} {
			res, _, _ := run(t, "我这个月迟到了几次", [2]string{"hr_attendance", `{"subject":"我"}`}, said)
			if res.Reply != said {
				t.Errorf("reply = %q, want the answer as is", res.Reply)
			}
		}
	})
	t.Run("SomeoneElseReportsNotAsked", func(t *testing.T) {
		// 王经理 says something; the data asked for is the asker's.
		res, log, _ := run(t, "王经理说我的考勤有异常，帮我看看",
			[2]string{"hr_attendance", `{"subject":"self"}`}, "这个月缺卡 1 次。")
		if len(log.all()) != 1 || strings.Contains(res.Reply, "无法查看") {
			t.Errorf("reply = %q after calls %q, want the asker's own data", res.Reply, log.all())
		}
	})
	t.Run("SubjectLeftOut", func(t *testing.T) {
		// A model that leaves the argument out: the text decides.
		res, log, _ := run(t, "我还有几天年假，这个月考勤正常吗", [2]string{"hr_attendance", `{}`}, "考勤正常。")
		if len(log.all()) != 1 || !strings.Contains(res.Reply, "你本人") {
			t.Errorf("reply = %q after calls %q, want the labeled answer", res.Reply, log.all())
		}
	})
	t.Run("AnswerEchoesAPersonTheRequestNames", func(t *testing.T) {
		// The text check misses 小赵 after 实习生 and the model wrote
		// "self": the skill runs, and the answer naming 小赵 over the
		// caller's record is corrected once, then replaced.
		res, log, _ := run(t, "新来的实习生小赵的考勤正常吗",
			[2]string{"hr_attendance", `{"subject":"self"}`}, "小赵这个月迟到 0 次。", "小赵这个月迟到 0 次。")
		if len(log.all()) != 1 {
			t.Errorf("calls = %q, want the one the model called for \"self\"", log.all())
		}
		if want := fmt.Sprintf(d.OwnDataOnly, "小赵"); res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
	})
	t.Run("SelfAndColleague", func(t *testing.T) {
		// The asker and a colleague in one request: the asker's part is
		// answered, the colleague's is not run, and the reply says so.
		res, log, _ := run(t, "帮我看看我和小王这个月的考勤",
			[2]string{"hr_attendance", `{"subject":"self"}`}, [2]string{"hr_attendance", `{"subject":"小王"}`},
			"你这个月迟到 0 次；小王的考勤我无法查看。")
		if len(log.all()) != 1 {
			t.Errorf("calls = %q, want the asker's only", log.all())
		}
		if want := fmt.Sprintf(d.OwnDataOnly, "小王") + "\n你这个月迟到 0 次；小王的考勤我无法查看。"; res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
	})
	t.Run("SelfAndColleagueModelAsksOnlyForSelf", func(t *testing.T) {
		// The model calls for the asker only: the reply still says the
		// colleague's data cannot be shown.
		res, log, _ := run(t, "我跟老李今年的考勤对比一下", [2]string{"hr_attendance", `{"subject":"self"}`}, "你今年迟到 2 次。")
		if len(log.all()) != 1 {
			t.Errorf("calls = %q, want the asker's", log.all())
		}
		if want := fmt.Sprintf(d.OwnDataOnly, "老李") + "\n你今年迟到 2 次。"; res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
		// Who of the two: 谁 is no part of the name.
		res, _, _ = run(t, "我和徐姐谁的考勤好", [2]string{"hr_attendance", `{"subject":"self"}`}, "你今年迟到 2 次。")
		if want := fmt.Sprintf(d.OwnDataOnly, "徐姐") + "\n你今年迟到 2 次。"; res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
	})
	t.Run("SelfAndColleagueRelabeled", func(t *testing.T) {
		// The caller's record worded as the colleague's is still
		// corrected, then replaced by the answer's part about the asker
		// alone, after the sentence that the colleague's cannot be shown.
		res, _, _ := run(t, "我和小王这个月的考勤", [2]string{"hr_attendance", `{"subject":"self"}`},
			"你迟到 0 次，小王迟到 0 次。", "你迟到 0 次，小王迟到 0 次。")
		if want := fmt.Sprintf(d.OwnDataOnly, "小王") + "\n你迟到 0 次。"; res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
	})
	t.Run("SelfAndColleagueNoListKnows", func(t *testing.T) {
		// 大刘 is neither a nickname nor a surname the text check knows,
		// and the model wrote "self" and put the asker's record under
		// 大刘's name twice: the person joined to the asker is someone
		// else by the request's structure, so the reply says 大刘's data
		// cannot be shown and shows the rest as the asker's own.
		res, log, _ := run(t, "我和对门工位的大刘谁的考勤好", [2]string{"hr_attendance", `{"subject":"self"}`},
			"大刘这个月的记录：迟到 0 次，缺卡 1 次。", "大刘这个月的记录：迟到 0 次，缺卡 1 次。")
		if len(log.all()) != 1 {
			t.Errorf("calls = %q, want the asker's", log.all())
		}
		want := fmt.Sprintf(d.OwnDataOnly, "大刘") + "\n" + fmt.Sprintf(d.OwnDataLabel, "考勤查询") + "\n迟到 0 次，缺卡 1 次。"
		if res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
		// A description joined without 的 (楼下前台妹子), and an answer
		// calling the person by its head (前台妹子).
		res, _, _ = run(t, "我和楼下前台妹子谁的考勤好", [2]string{"hr_attendance", `{"subject":"self"}`},
			"前台妹子这个月：迟到 0 次。", "前台妹子这个月：迟到 0 次。")
		want = fmt.Sprintf(d.OwnDataOnly, "楼下前台妹子") + "\n" + fmt.Sprintf(d.OwnDataLabel, "考勤查询") + "\n迟到 0 次。"
		if res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
	})
	t.Run("HolderNoListKnows", func(t *testing.T) {
		// 胖哥, 师父, 钱总监: neither a nickname nor a surname the text check
		// knows, and the model wrote "self". The answer puts them before
		// the record as the request does: corrected once, then replaced.
		for _, c := range []struct{ q, who, said string }{
			{"胖哥这个月打卡正常吗", "胖哥", "胖哥这个月迟到 0 次。"},
			{"我师父的考勤怎么样", "师父", "师父的考勤：迟到 0 次。"},
			{"钱总监的考勤出来了没", "钱总监", "钱总监这个月迟到 0 次。"},
			// a Latin name anywhere in the request, and a holder right
			// before the record with no 的 (held-out round 14)
			{"运营部的Lily这个月迟到了吗", "Lily", "Lily这个月迟到 0 次。"},
			{"对面桌的眼镜哥考勤正常吗", "眼镜哥", "眼镜哥这个月迟到 0 次。"},
		} {
			res, log, _ := run(t, c.q, [2]string{"hr_attendance", `{"subject":"self"}`}, c.said, c.said)
			if len(log.all()) != 1 {
				t.Errorf("%s: calls = %q, want the one the model called for \"self\"", c.q, log.all())
			}
			if want := fmt.Sprintf(d.OwnDataOnly, c.who); res.Reply != want {
				t.Errorf("%s: reply = %q, want %q", c.q, res.Reply, want)
			}
		}
	})
	t.Run("RecordBeforeTheCueIsNoHolder", func(t *testing.T) {
		// The record itself before 这个月 (a word of the skill) is no one.
		res, _, _ := run(t, "考勤这个月正常吗", [2]string{"hr_attendance", `{"subject":"self"}`}, "考勤这个月正常，迟到 0 次。")
		if want := fmt.Sprintf(d.OwnDataLabel, "考勤查询") + "\n考勤这个月正常，迟到 0 次。"; res.Reply != want {
			t.Errorf("reply = %q, want %q", res.Reply, want)
		}
	})
	t.Run("NotStreamedBeforeChecked", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(call("hr_attendance", `{"subject":"老李"}`), answer("老李这个月迟到 0 次。"))
		var mu sync.Mutex
		var shown strings.Builder
		opts := testOptions()
		opts.Progress = func(e agent.Event) {
			mu.Lock()
			defer mu.Unlock()
			if e.Kind == agent.EventModelDelta {
				shown.WriteString(e.Text)
			}
		}
		res, err := agent.Run(context.Background(), m, testTurn("老李这个月的考勤怎么样", []skills.Tool{strictAttendance(nil)}), opts)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(shown.String(), "迟到") || res.Reply != fmt.Sprintf(d.OwnDataOnly, "老李") {
			t.Errorf("streamed %q, reply %q; want nothing streamed and the refusal", shown.String(), res.Reply)
		}
	})
	t.Run("LabeledAfterResume", func(t *testing.T) {
		// The personal result came in the run that stopped to ask; the
		// resumed run's reply still says whose it is.
		srv, m := newModel(t)
		srv.Script(call("hr_attendance", `{"subject":"self"}`), call("hr_leave_apply", `{}`), answer("已提交，这个月迟到 0 次。"))
		ask := &fakeTool{name: "hr_leave_apply", out: `{"requires_followup":true,"question":"请假从哪天开始？"}`, contentType: "application/json", write: true}
		tools := []skills.Tool{strictAttendance(nil), ask}
		first, err := agent.Run(context.Background(), m, testTurn("我这个月迟到几次？没迟到就帮我请个假", tools), testOptions())
		if err != nil || first.StopReason != agent.StopNeedsInput {
			t.Fatalf("Run = %q, %v; want a question", first.StopReason, err)
		}
		turn := testTurn("下周一", tools)
		turn.Resume = first.Continuation
		res, err := agent.Run(context.Background(), m, turn, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(d.OwnDataLabel, "考勤查询"); !strings.HasPrefix(res.Reply, want) {
			t.Errorf("reply = %q, want it to start with %q", res.Reply, want)
		}
	})
	t.Run("StreamMatchesTheReply", func(t *testing.T) {
		// What is streamed is the start of the reply: an answer that says
		// whose the data is streams as it comes; one that does not is held
		// for the reply, which carries the label.
		for answerText, wantStreamed := range map[string]string{"你这个月迟到 0 次。": "你这个月迟到 0 次。", "这个月迟到 0 次。": ""} {
			srv, m := newModel(t)
			srv.Script(call("hr_attendance", `{"subject":"self"}`), answer(answerText))
			var mu sync.Mutex
			var shown strings.Builder
			opts := testOptions()
			opts.Progress = func(e agent.Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Kind == agent.EventModelDelta {
					shown.WriteString(e.Text)
				}
			}
			res, err := agent.Run(context.Background(), m, testTurn("我这个月迟到了几次", []skills.Tool{strictAttendance(nil)}), opts)
			if err != nil {
				t.Fatal(err)
			}
			if shown.String() != wantStreamed || !strings.HasSuffix(res.Reply, answerText) {
				t.Errorf("answer %q: streamed %q, reply %q; want %q streamed", answerText, shown.String(), res.Reply, wantStreamed)
			}
		}
	})
	t.Run("NotPersonalRunsForAnyone", func(t *testing.T) {
		srv, m := newModel(t)
		srv.Script(call("hr_directory_lookup", `{"name":"老李"}`), answer("老李的分机号是 8001。"))
		dir := &fakeTool{name: "hr_directory_lookup", out: `{"name":"老李","ext":"8001"}`,
			params: `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`,
			edit:   func(s *skills.Spec) { s.Description = "按姓名查同事的分机号" }}
		res, err := agent.Run(context.Background(), m, testTurn("老李的分机号多少", []skills.Tool{dir}), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if res.Reply != "老李的分机号是 8001。" {
			t.Errorf("reply = %q, want the answer as is", res.Reply)
		}
	})
	t.Run("DeclaredPersonal", func(t *testing.T) {
		// Spec.Personal wins over the description.
		srv, m := newModel(t)
		srv.Script(call("hr_meal_query", `{"subject":"小周"}`), answer("小周本月餐补 300 元。"))
		log := &callLog{}
		yes := true
		meal := &fakeTool{name: "hr_meal_query", out: `{"amount":300}`, log: log,
			edit: func(s *skills.Spec) { s.Description = "餐补查询"; s.Personal = &yes }}
		res, err := agent.Run(context.Background(), m, testTurn("小周这个月餐补多少", []skills.Tool{meal}), testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if len(log.all()) != 0 || res.Reply != fmt.Sprintf(d.OwnDataOnly, "小周") {
			t.Errorf("reply = %q after calls %q", res.Reply, log.all())
		}
	})
}
