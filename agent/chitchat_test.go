package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/skills"
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

// Held-out round 5 of issue #37 ran a skill for three look-alikes: an
// opinion asked on a choice (分析一下 on 爬山还是烧烤), a counted thing
// made whose noun no list had (几道考题), and a quantity without a
// numeral (点话术). Decided by the request's shape: what is produced,
// and whether a record is asked for, not by the topic words.
func TestChitChat_ShapeOfTheRequest(t *testing.T) {
	t.Parallel()
	chat := []string{
		// round 5's misses
		"团建去爬山还是去烧烤好，帮我分析一下", "给我出几道新人培训的考题", "怎么跟领导开口说我想调岗，给我点话术",
		// a counted thing made, a noun no skill uses
		"周五团建，帮我准备几个破冰游戏", "帮我出一套入职培训的测试题", "帮我做一个部门预算汇报的大纲",
		// opinions
		"加班和调休哪个更划算", "我该不该接受调岗", "绩效面谈时怎么跟主管沟通", "帮我分析一下年终奖和股票哪个更值",
		// a figure or fact stated, not asked for
		"帮我写个团建方案，我的预算是5000", "我的年假还剩5天，帮我规划一下怎么休", "我的报销批了，帮我写封感谢邮件给财务",
		// record words inside the text to write
		"帮我写一封申请调岗的邮件", "帮我写个项目进度汇报",
		// asking how to word it, or what is good
		"老板说要我写个述职报告，怎么写", "下周要给新人做入职分享，讲点什么好", "你觉得我该跳槽吗", "有什么好玩的团建游戏推荐吗",
		"给我推荐几个适合团建的桌游", "帮我设计一下团建的流程", "帮我起个群名",
		// held-out round 6's misses: a verb no skill uses before a counted
		// text, how to say it, a choice without 好, ideas asked with 有什么
		"年会要上台说几句，帮我攒一段开场白", "新同事下周入职，我想在群里发个欢迎消息，怎么说比较得体", "部门聚餐选火锅还是日料",
		"预算有限的情况下，团建有什么省钱的玩法",
		// held-out round 7's misses: what is good to put, a quoted
		// sentence to rework, a classifier (部), how best to answer, an
		// amount of something no skill holds
		"明天述职，PPT第一页放什么内容好", "帮我把周报里'报销系统上线'这句改得有气势一点", "推荐一部适合周末看的电影",
		"如果领导不批年假，我该怎么回应比较好", "打工人周一综合症怎么破，来点鸡汤",
		// held-out round 8's misses: 翻成, 有啥点子, X是啥, how to do it
		// politely, 求 what no skill holds
		"帮我把这段英文翻成中文：Please submit your expense report by Friday.", "我们组想给过生日的同事准备个惊喜，有啥点子",
		"绩效考核里的360评估是啥", "怎么礼貌地催同事回消息", "加班到十点，求安慰",
		// held-out round 9's misses: a problem with nothing the systems
		// hold, whether something fits
		"周会冷场了怎么办", "团建玩剧本杀合适吗",
		// held-out round 10's misses: what else to do (搞点啥), whether to,
		// a sentence reworded (说得), how to do what no skill does, where
		// two differ, a text the clauses before describe, 听听 after it
		"年会节目除了唱歌跳舞还能搞点啥", "工作三年了要不要考个PMP", "帮忙把这句话说得委婉点：你的方案不行",
		"下周轮到我主持周会，开场怎么暖场", "劳动合同和劳务合同差在哪", "周五下班前给大家发个温馨提示，提醒关窗关空调，帮我写一下",
		"这周好累啊，讲个段子听听",
		// held-out rounds 8 and 11's misses: a general question (what one
		// should do, what a kind of thing holds), a text counted with its
		// 一 dropped (写段话)
		"新人第一天上班要注意啥", "离职交接文档一般包含哪些部分", "帮我写段话感谢HR小姐姐帮我办入职", "来首关于加班的打油诗",
		// held-out round 12's misses: what a kind of text is like, a
		// statement about the asker, how to address them from now on
		"请假条的格式一般是怎样的", "我是做前端的，平时喜欢跑步", "以后叫我小林就行", "我常驻上海办公室", "我姓林，在三楼",
		// held-out round 13's misses: a feeling, with an event of the
		// asker's or the day; which of two is worth it
		"我下个月结婚，好紧张啊", "今天是周五，心情不错", "公积金贷款和商业贷款哪个划算", "这周太累了",
		// held-out round 14's misses: a feeling after a time and a topic,
		// and what it is about naming a record
		"最近压力好大", "这周五发年终奖，好开心",
		// held-out round 15's misses: a habit after who the asker is,
		// where is better
		"我是个夜猫子，早上总起不来", "周末带娃去哪儿玩比较好",
		// held-out round 16's misses: a degree complement, how a rule goes
		"今天加班到好晚，累死了", "个税和社保的扣款顺序是怎么样的",
	}
	request := []string{
		// the brief's look-alikes
		"帮我写一个报修单：打印机坏了", "解释一下我这个月工资为什么少了",
		// a counted thing the catalog holds
		"帮我出一份收入证明", "帮我准备一间会议室", "帮我约个体检", "给我来一台新电脑", "起草一份用印申请", "写个IT工单，电脑蓝屏了",
		// records named or asked about
		"帮我整理一下我的报销记录", "帮我列一下这个月的加班", "帮我分析一下这个月的考勤", "帮我比较一下这两个月的工资",
		"给我的报修单打个五星", "好，给个五星", "我的年假还剩几天，帮我写个请假条", "我的工资到账了吗，帮我写个感谢信",
		// a second act joined to the text
		"帮我写一段请假理由并提交申请", "我的预算还剩多少，帮我写个团建方案",
		// a recommendation or a wording about a record
		"帮我推荐一个候选人", "你觉得我的绩效能拿A吗", "公积金提取申请怎么写",
		// held-out round 6's miss: a state of one's own told as the reason
		// of a request; and what the catalog holds asked with 有什么
		"帮我想想办法，我的门禁卡丢了要补办", "这个月有什么福利", "我的报销还是没到账，帮我写个催办说明",
		"我的报销怎么提交比较好", "好，给个五星", "我的绩效是啥", "怎么快速地提交报销", "求报销进度", "张伟的邮箱是什么",
		// held-out round 9's miss: a way asked out of a problem with what
		// the systems hold
		"帮我想想办法，VPN密码忘了", "电脑打不开了怎么办",
		// held-out round 10's miss: a way asked to do what a skill does;
		// and 怎么 asking why or how it is, or how to do a skill's act
		"想想办法帮我把笔记本换了，太卡了", "我那个IT工单怎么还没人处理", "这个月考勤怎么样", "怎么请假", "公积金怎么提取",
		// a general question's act or noun a skill's (要订什么, 什么流程),
		// one record pointed at (这张), the hour (几点) and 本 as "this"
		"我要订什么会议室", "请假要走什么流程", "这张报销单还要补什么", "几点上班", "帮我出本月的加班报表",
		// a statement whose verb is an act, or about a record, or with a
		// request after it
		"我明天请假", "我下周出差", "我在等报销到账", "我是新来的，帮我开个在职证明", "以后每周一帮我订会议室", "我的门禁卡丢了",
		// a feeling about what the systems hold is a problem reported
		"我的电脑好卡", "这个月工资太少了", "哪个会议室空着", "我的报销还没到账，好烦", "电脑又坏了，好烦",
		"我是新来的，工牌还没发", "我在三楼，打印机坏了", "这个月考勤是怎样的", "电脑卡死了",
	}
	for _, n := range []int{100, 500} {
		m := matcherFor(largeCatalogSpecs(n), newColloquialTable(nil))
		for _, q := range chat {
			if !chitChat(normalizeText(q), m) {
				t.Errorf("%d skills: chitChat(%q) = false, it asks for a text, ideas or an opinion", n, q)
			}
		}
		for _, q := range request {
			if chitChat(normalizeText(q), m) {
				t.Errorf("%d skills: chitChat(%q) = true, it is a request", n, q)
			}
		}
	}
}

// A tempted model calls the event skill for an opinion on a team
// outing: it is offered nothing, and the call does not run.
func TestRun_OpinionOnAnOutingCallsNoSkill(t *testing.T) {
	t.Parallel()
	var calls int
	m := &scripted{replies: []openai.ChatCompletionMessage{toolCallMsg("admin_event_query", `{}`)}}
	turn := Turn{SessionID: "s", RunID: "r", UserText: "团建去爬山还是去烧烤好，帮我分析一下", Tools: largeCatalog(500, &calls)}
	if _, err := Run(context.Background(), m, turn, Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	if n := len(m.reqs[0].Tools); n != 0 || calls != 0 {
		t.Errorf("%d tools offered, %d skill calls; want none", n, calls)
	}
}

// The user's text is hostile: the shape test never panics, and a
// message that asks for a look-up in a clause of its own is never taken
// for chit-chat, whatever comes before it.
func FuzzChitChat(f *testing.F) {
	for _, s := range []string{"团建去爬山还是去烧烤好，帮我分析一下", "给我出几道新人培训的考题", "给我点话术", "帮我写一个报修单：打印机坏了",
		"好，给个五星", "一二三四五六七八九十几", "个", "点个", "写", "：", "\xff\xfe", "帮我写个团建方案，我的预算是5000"} {
		f.Add(s)
	}
	m := matcherFor(largeCatalogSpecs(100), newColloquialTable(nil))
	f.Fuzz(func(t *testing.T, s string) {
		chitChat(s, m)
		if q := s + "，帮我查一下考勤"; !strings.ContainsAny(s, "：:") && chitChat(q, m) {
			t.Errorf("chitChat(%q) = true, it asks for a look-up", q)
		}
	})
}

// TestChitChatQuestionGetsOnlyTheDocuments: a question that asks how or
// what is (chit-chat by its shape: no record asked for) is offered the
// company's document search and no skill; a text to write gets neither; a
// request gets its skill.
func TestChitChatQuestionGetsOnlyTheDocuments(t *testing.T) {
	docs := catalogTool{spec: skills.Spec{Name: "knowledge_search", Description: "Search the company's documents: rules, guides, how-tos.",
		ReadOnly: true, Documents: true, Triggers: skills.Triggers{Always: true}, Parameters: json.RawMessage(`{"type":"object"}`)}}
	leave := catalogTool{spec: skills.Spec{Name: "hr_leave_balance", Description: "查询我的年假余额 剩余天数",
		ReadOnly: true, Parameters: json.RawMessage(`{"type":"object"}`)}}
	offered := func(text string, previous ...string) []string {
		t.Helper()
		off, err := offerTools(offerInput{tools: []skills.Tool{docs, leave}, text: normalizeText(text), limit: 8,
			previous: strings.Join(previous, "")})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range off.entries {
			names = append(names, e.spec.Name)
		}
		return names
	}
	for _, q := range []string{"收到钓鱼邮件怎么办", "新人第一天上班要注意啥"} {
		if got := offered(q); len(got) != 1 || got[0] != "knowledge_search" {
			t.Errorf("%s: a how-to question was offered %v, want the document search alone", q, got)
		}
	}
	if got := offered("帮我写一封请假邮件"); len(got) != 0 {
		t.Errorf("a text to write was offered %v, want nothing", got)
	}
	if got := offered("我还有几天年假"); !slices.Contains(got, "hr_leave_balance") {
		t.Errorf("a request was offered %v, want its skill", got)
	}
	// A statement is chit-chat alone, and the detail of a request after
	// one (你叫什么？我是张三).
	if got := offered("我是张三"); len(got) != 0 {
		t.Errorf("a statement was offered %v, want nothing", got)
	}
	if got := offered("我是张三", "我还有几天年假"); !slices.Contains(got, "hr_leave_balance") {
		t.Errorf("a statement after a request was offered %v, want the request's skill", got)
	}
}
