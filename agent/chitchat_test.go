package agent

import (
	"context"
	"log/slog"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// Chit-chat that looks like a task (issue #37 item 2): what the message
// asks for decides, not a company word in it.
func TestIsChitChat_ByStructure(t *testing.T) {
	for _, q := range []string{
		"帮我出个团建方案，预算5000左右", "帮我想几个年会节目的点子", "做一份年终总结的大纲", "给我讲讲公积金怎么算的",
		"给我几个团建的点子，人均200以内", "帮我写个团建方案，预算5000", "解释一下什么是年假折算", "帮我写一封请假邮件",
		"我要在周会上发言，帮我拟个开场白", "年假和调休到底有啥不一样", "给新同事写一段欢迎词", "帮我策划一个团建活动，预算人均300",
		"给我们部门群起个名字", "推荐几本适合新经理看的书", "调休用英文怎么说", "公司要搞年会了，帮我想个开场小游戏",
	} {
		if !isChitChat(q) {
			t.Errorf("isChitChat(%q) = false, it asks for writing, ideas or an explanation", q)
		}
	}
	for _, q := range []string{
		"帮我出一份在职证明", "帮我写个报销单", "帮我写个团建方案，顺便订个会议室", "查下我的考勤，写个总结", "帮我做个体检预约",
		"帮我起草一份离职申请", "出个证明", "团建预算还剩多少", "帮我订个会议室，再写个会议通知", "明天要开会，帮我订个会议室",
	} {
		if isChitChat(q) {
			t.Errorf("isChitChat(%q) = true, it is a request", q)
		}
	}
}

// A tempted model calls the budget skill for a plan with a budget: it is
// offered nothing, and the call does not run.
func TestRun_PlanWithABudgetCallsNoSkill(t *testing.T) {
	var calls int
	m := &scripted{replies: []openai.ChatCompletionMessage{toolCallMsg("fin_budget_query", `{}`)}}
	turn := Turn{SessionID: "s", RunID: "r", UserText: "帮我出个团建方案，预算5000左右", Tools: largeCatalog(500, &calls)}
	if _, err := Run(context.Background(), m, turn, Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	if n := len(m.reqs[0].Tools); n != 0 || calls != 0 {
		t.Errorf("%d tools offered, %d skill calls; want none", n, calls)
	}
}

// With the catalog in view, the object of a writing verb that no skill
// names is a text to write; one a skill names is a record.
func TestChitChat_WritingWithTheCatalog(t *testing.T) {
	m := matcherFor(largeCatalogSpecs(100), newColloquialTable(nil))
	for q, want := range map[string]bool{
		"帮我写个周末加班的请假说明，语气诚恳": true, "给新来的实习生写几条入职注意事项": true,
		"帮我写个报销单": false, "帮我写个加班申请": false, "帮我起草一份离职申请": false,
	} {
		if got := chitChat(q, m); got != want {
			t.Errorf("chitChat(%q) = %v, want %v", q, got, want)
		}
	}
}
