package agent_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/skills"
)

// catalog20 binds the benchmark's sample catalog (testdata/catalog20) to a
// caller; its backends are never reached by these tests.
func catalog20(t *testing.T) []skills.Tool {
	t.Helper()
	reg, err := skills.LoadRegistry(os.DirFS("testdata/catalog20/skills"), skills.Options{BaseURL: "http://backend.invalid", DefaultHMACKeyEnv: "CATALOG20_HMAC_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	return reg.ToolsFor(skills.Caller{UserID: "zhangsan"})
}

// firstRequest runs turn against a model that answers at once and returns
// the request it got.
func firstRequest(t *testing.T, turn agent.Turn, opts agent.Options) openai.ChatCompletionRequest {
	t.Helper()
	srv, m := newModel(t)
	srv.Script(answer("好"))
	if _, err := agent.Run(context.Background(), m, turn, opts); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return srv.Requests()[0]
}

func history(texts ...string) []agent.Message {
	var out []agent.Message
	for i, text := range texts {
		role := agent.RoleUser
		if i%2 == 1 {
			role = agent.RoleAssistant
		}
		out = append(out, agent.Message{Role: role, Content: text})
	}
	return out
}

func TestOffer_MatchesByMeaning(t *testing.T) {
	tools := catalog20(t)
	for _, tc := range []struct {
		name    string
		text    string
		history []agent.Message
		recent  []string
		want    []string // each must be offered in full
	}{
		{name: "Synonym", text: "上个月实际到账多少钱", want: []string{"hr_payslip"}},
		{name: "SynonymNotInTriggers", text: "公积金每个月交多少", want: []string{"hr_social_insurance"}},
		{name: "ShortenedWord", text: "我的 VPN 证书是不是快过期了", want: []string{"it_account_validity"}},
		{name: "Abbreviation", text: "OA 密码忘了", want: []string{"it_password_reset"}},
		{name: "AbbreviationLowerCase", text: "开通一下vpn，一周就行", want: []string{"it_vpn_access"}},
		{name: "Description", text: "张伟的邮箱是什么", want: []string{"hr_directory_lookup"}},
		{name: "ParameterWords", text: "明早十点订个能坐8个人的房间开会", want: []string{"it_meeting_room_book"}},
		{name: "TwoSkills", text: "查下我还剩几天年假，顺便帮我请下周五一天", want: []string{"hr_leave_balance", "hr_leave_apply"}},
		{name: "TwoSkillsOneSentence", text: "工资条和公积金明细都发我看看", want: []string{"hr_payslip", "hr_social_insurance"}},
		{name: "FollowUp", text: "那上个月呢", history: history("这个月工资多少", "你 11 月实发 12,345.00 元。"),
			want: []string{"hr_payslip"}},
		{name: "FollowUpFromReply", text: "它现在到哪一步了",
			history: history("显示器闪屏，帮我报个修", "已创建工单 INC-1004「显示器闪屏」。"), want: []string{"it_ticket_status"}},
		{name: "FollowUpRecentTools", text: "那另一个呢", recent: []string{"fin_expense_status"},
			want: []string{"fin_expense_status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			turn := testTurn(tc.text, tools)
			turn.History, turn.RecentTools = tc.history, tc.recent
			got := toolNames(firstRequest(t, turn, testOptions()))
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s not offered in full; offered %q", w, got)
				}
			}
			if n := len(got); n > 6 {
				t.Errorf("%d tools offered: %q", n, got)
			}
		})
	}
}

func TestOffer_WeakMatchOffersTheIndex(t *testing.T) {
	tools := catalog20(t)
	req := firstRequest(t, testTurn("想装个 PS 做图", tools), testOptions())
	if got := toolNames(req); !slices.Contains(got, "load_skills") {
		t.Fatalf("no load_skills on a weak match: %q", got)
	}
	sys := req.Messages[0].Content
	for _, tool := range tools {
		spec := tool.Spec()
		if line := "- " + spec.Name + ": " + spec.DisplayName + "\n"; !strings.Contains(sys, line) {
			t.Errorf("index lacks %q", line)
		}
	}
}

func TestOffer_IndexListsOnlyAllowedSkills(t *testing.T) {
	// The gateway binds only what the caller may use; the index is built
	// from that, so a skill the user may not use is never named.
	var tools []skills.Tool
	for _, tool := range catalog20(t) {
		if !strings.HasPrefix(tool.Spec().Name, "fin_") {
			tools = append(tools, tool)
		}
	}
	req := firstRequest(t, testTurn("报销的钱什么时候打到卡上", tools), testOptions())
	if sys := req.Messages[0].Content; !strings.Contains(sys, "<SKILL_INDEX>") || strings.Contains(sys, "fin_") {
		t.Errorf("index missing or naming a skill the user may not use:\n%s", sys)
	}
	for _, name := range toolNames(req) {
		if strings.HasPrefix(name, "fin_") {
			t.Errorf("offered %s", name)
		}
	}
}

func TestOffer_SystemPromptStableAcrossTurns(t *testing.T) {
	tools := catalog20(t)
	a := firstRequest(t, testTurn("我今年还能休几天啊", tools), testOptions())
	b := firstRequest(t, testTurn("打印机又卡纸了", tools), testOptions())
	if a.Messages[0].Content != b.Messages[0].Content {
		t.Errorf("system prompt differs between turns:\n%s\n---\n%s", a.Messages[0].Content, b.Messages[0].Content)
	}
}

func TestOffer_SmallCatalogOfferedWholeWhenInDoubt(t *testing.T) {
	// A greeting asks for nothing and gets no tools (chitchat.go); a vague
	// request is the doubt.
	req := firstRequest(t, testTurn("有件事想请你帮忙", hrTools(nil)), testOptions())
	if got, want := toolNames(req), []string{"hr_leave_balance", "hr_policy_search", "it_ticket_create", "it_ticket_status"}; !slices.Equal(got, want) {
		t.Errorf("offered %q, want the whole catalog %q", got, want)
	}
	if strings.Contains(req.Messages[0].Content, "<SKILL_INDEX>") {
		t.Errorf("a small catalog needs no index")
	}
}

func TestOffer_AlwaysAndBoundFirstUpToCap(t *testing.T) {
	tools := catalog20(t)
	turn := testTurn("工资条和公积金明细都发我看看", tools)
	turn.BoundTools = []string{"it_ticket_create", "it_asset_lookup"}
	opts := testOptions()
	opts.MaxTools = 3
	got := toolNames(firstRequest(t, turn, opts))
	got = slices.DeleteFunc(got, func(n string) bool { return n == "load_skills" })
	if len(got) != 3 || !slices.Contains(got, "it_ticket_create") || !slices.Contains(got, "it_asset_lookup") {
		t.Errorf("offered %q, want both bound skills and one match", got)
	}
}

func TestOffer_LoadSkillsThenCall(t *testing.T) {
	log := &callLog{}
	tools := indexTools(log)
	srv, m := newModel(t)
	srv.Script(call("load_skills", `{"names":["s08_software"]}`), call("s08_software", `{}`), answer("已提交"))
	res, err := agent.Run(context.Background(), m, testTurn("想装个 PS 做图", tools), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	reqs := srv.Requests()
	if slices.Contains(toolNames(reqs[0]), "s08_software") || !slices.Contains(toolNames(reqs[1]), "s08_software") {
		t.Errorf("tools: first %q, after loading %q", toolNames(reqs[0]), toolNames(reqs[1]))
	}
	if got := log.all(); !slices.Equal(got, []string{"s08_software {}"}) {
		t.Errorf("calls %q", got)
	}
}

func TestOffer_IndexSkillCalledDirectly(t *testing.T) {
	log := &callLog{}
	srv, m := newModel(t)
	srv.Script(call("s08_software", `{}`), answer("已提交"))
	res, err := agent.Run(context.Background(), m, testTurn("想装个 PS 做图", indexTools(log)), testOptions())
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	if got := log.all(); !slices.Equal(got, []string{"s08_software {}"}) {
		t.Errorf("calls %q", got)
	}
	if !anyDelta(res.Steps, "skill loaded from the index: s08_software") {
		t.Errorf("loading not traced: %+v", res.Steps)
	}
}

// indexTools is a catalog above MaxTools whose descriptions match nothing
// of "想装个 PS 做图", so the index is on.
func indexTools(log *callLog) []skills.Tool {
	var tools []skills.Tool
	for _, name := range []string{"s01_leave", "s02_pay", "s03_policy", "s04_ticket", "s05_status", "s06_vpn",
		"s07_room", "s08_software", "s09_asset", "s10_unlock"} {
		tools = append(tools, &fakeTool{name: name, out: `{"ok":true}`, contentType: "application/json", log: log})
	}
	return tools
}
