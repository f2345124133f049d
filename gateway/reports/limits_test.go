package reports_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
)

// chatReport is a report an employee asks for in chat (ByAdmin false):
// skill with args, on cron, into the IT group.
func chatReport(name, cron, skill, args string) reports.NewReport {
	nr := gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpSkip, group("it-group"))
	nr.Name, nr.Cron, nr.Spec.Skill, nr.Spec.Chart = name, cron, skill, nil
	if args != "" {
		nr.Spec.Args, nr.Spec.Template = json.RawMessage(args), "{{.Data}}"
	}
	return nr
}

// refusal is err's *reports.Refusal, failing the test without one.
func refusal(t *testing.T, err error, kind error) *reports.Refusal {
	t.Helper()
	var r *reports.Refusal
	if !errors.As(err, &r) || !errors.Is(err, kind) || !errors.Is(err, reports.ErrBadReport) {
		t.Fatalf("err %v, want a refusal for %v", err, kind)
	}
	return r
}

// TestChatReportLimits: a report an employee creates is refused when two
// of its coming fires are closer than reports.min_interval (by the fire
// times, whatever the text), when it calls a skill that changes data,
// and past reports.max_per_user; each with a Chinese sentence naming
// the limit, and nothing saved. An admin's report is held to none of
// them.
func TestChatReportLimits(t *testing.T) {
	t.Parallel()
	h, ch, clock := reportRig(t)
	clock.Set(time.Date(2026, 12, 8, 10, 0, 0, 0, gatewaytest.Shanghai)) // a Tuesday: the 1st is three weeks away
	_, rs := h.StartWithReports("reports:\n  scan_interval: 1h\n  max_per_user: 2\n", gateway.Deps{Channels: []channels.Channel{ch}, Now: clock.Now})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)

	for _, cron := range []string{"* * * * *", "*/10 * * * * *", "*/30 9 * * 1", "0,30 9 1 * *"} {
		_, err := rs.CreateReport(ctx, chatReport("频繁", cron, "it_ticket_weekly", ""))
		r := refusal(t, err, reports.ErrTooFrequent)
		if !strings.Contains(r.Sentence, "两次发送之间至少要隔 1 小时") {
			t.Errorf("%q: %q, want the minimum named", cron, r.Sentence)
		}
	}
	_, err := rs.CreateReport(ctx, chatReport("每天提工单", "0 9 * * *", "it_ticket_create", `{"title":"打印机","description":"例行检查"}`))
	if r := refusal(t, err, reports.ErrWriteSkill); !strings.Contains(r.Sentence, "「提 IT 工单」会修改数据") {
		t.Errorf("write skill: %q", r.Sentence)
	}
	if n := h.Count(`SELECT count(*) FROM reports`); n != 0 {
		t.Fatalf("%d reports saved after refusals", n)
	}

	for i, cron := range []string{"0 9 * * 1", "0 * * * *"} { // hourly is exactly the minimum
		if _, err := rs.CreateReport(ctx, chatReport(fmt.Sprintf("报告%d", i), cron, "it_ticket_weekly", "")); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	_, _, err = rs.PreviewReport(ctx, chatReport("第三个", "0 9 * * 2", "it_ticket_weekly", ""))
	if r := refusal(t, err, reports.ErrTooMany); !strings.Contains(r.Sentence, "最多可以在对话中创建 2 个") {
		t.Errorf("third report: %q", r.Sentence)
	}
	if _, err := rs.CreateReport(ctx, chatReport("第三个", "0 9 * * 2", "it_ticket_weekly", "")); !errors.Is(err, reports.ErrTooMany) {
		t.Errorf("third report created: %v", err)
	}
	// Another user has places of their own.
	lisi := chatReport("李四的报告", "0 9 * * 1", "it_ticket_weekly", "")
	lisi.Owner.User = "lisi"
	if _, err := rs.CreateReport(ctx, lisi); err != nil {
		t.Errorf("lisi's first report: %v", err)
	}

	// An operator's report may fire every minute and create tickets, and
	// does not count against the owner's places.
	admin := chatReport("巡检工单", "* * * * *", "it_ticket_create", `{"title":"打印机","description":"例行检查"}`)
	admin.ByAdmin = true
	if _, err := rs.CreateReport(ctx, admin); err != nil {
		t.Fatalf("admin report: %v", err)
	}
	if n := h.Count(`SELECT count(*) FROM reports WHERE owner_user = 'zhangsan' AND created_by = 'chat'`); n != 2 {
		t.Errorf("%d reports of zhangsan from chat, want 2", n)
	}
	if n := h.Count(`SELECT count(*) FROM reports WHERE created_by = 'admin' AND cron = '* * * * *'`); n != 1 {
		t.Errorf("the admin's report is not stored as the admin's")
	}
}

// TestChatReportAllowedWriteSkill: a skill that changes data and says
// reports: allow may be scheduled from chat; once its definition no
// longer says so, the next run is refused (recorded, the owner told).
func TestChatReportAllowedWriteSkill(t *testing.T) {
	t.Parallel()
	h, ch, clock := reportRig(t)
	dir := t.TempDir()
	define := func(reports string) {
		os.MkdirAll(filepath.Join(dir, "notify"), 0o755)
		os.WriteFile(filepath.Join(dir, "notify", "SKILL.md"), []byte("---\nname: it_notice_post\ndescription: 发布 IT 通知\n"+
			"display_name: 发布通知\nendpoint: /it/tickets/weekly\nconfirm: false\n"+reports+"identity:\n  hmac_key_env: HERMES_DEMO_IT_KEY\n---\n"), 0o644)
	}
	define("reports: allow\n")
	gw, rs := h.StartWithReports("reports:\n  scan_interval: 1h\n", gateway.Deps{Channels: []channels.Channel{ch}, Now: clock.Now, SkillsFS: os.DirFS(dir)})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	rep, err := rs.CreateReport(ctx, chatReport("每周通知", "0 9 * * 1", "it_notice_post", ""))
	if err != nil {
		t.Fatalf("a write skill with reports: allow: %v", err)
	}
	define("")
	if err := gw.ReloadSkills(); err != nil {
		t.Fatal(err)
	}
	runID, err := rs.RunReportNow(ctx, rep.ID, &zhangsan)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	run, err := store.GetReportRun(ctx, h.Pool, runID)
	if err != nil || run.Status != store.RunFailed || !strings.Contains(run.Error, "会修改数据") {
		t.Errorf("run %+v %v, want refused as a write skill", run, err)
	}
	sent := ch.Sent()
	if len(sent) != 1 || chantest.AddressOf(sent[0]).UserID != "zhangsan" || !strings.Contains(sent[0].Text, "技能「发布通知」") {
		t.Errorf("sent %+v, want only the note to the owner", sent)
	}
}

// TestChatPromptReportOffersOnlyUnattendedSkills: a prompt report made in
// chat runs the agent with the skills that may run unattended (read-only
// or reports: allow), never one that changes data; an admin's prompt
// report is offered the owner's skills.
func TestChatPromptReportOffersOnlyUnattendedSkills(t *testing.T) {
	t.Parallel()
	h, ch, clock := reportRig(t)
	h.Model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Content: "本周工单平稳。"}
	})
	_, rs := startReports(h, ch, clock)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	offered := func(byAdmin bool) []string {
		t.Helper()
		nr := chatReport(fmt.Sprintf("工单小结 %v", byAdmin), "0 9 * * 1", "", "")
		nr.Spec, nr.ByAdmin = reports.Spec{Prompt: "总结上周的工单统计；发现故障就提 IT 工单"}, byAdmin
		rep, err := rs.CreateReport(ctx, nr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rs.RunReportNow(ctx, rep.ID, nil); err != nil {
			t.Fatal(err)
		}
		h.WaitIdle(ctx)
		reqs := h.Model.Requests()
		var names []string
		for _, tool := range reqs[len(reqs)-1].Tools {
			names = append(names, tool.Function.Name)
		}
		return names
	}
	if got := offered(false); slices.Contains(got, "it_ticket_create") || !slices.Contains(got, "it_ticket_weekly") {
		t.Errorf("a prompt report from chat was offered %v", got)
	}
	if got := offered(true); !slices.Contains(got, "it_ticket_create") {
		t.Errorf("an admin's prompt report was offered %v, want it_ticket_create among them", got)
	}
}

// relayModel plays a model that schedules what the user asks for and
// relays a tool's answer (an error included) as its reply.
func relayModel(req openai.ChatCompletionRequest) openaitest.Reply {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == openai.ChatMessageRoleTool {
		return openaitest.Reply{Content: last.Content}
	}
	switch {
	case strings.Contains(last.Content, "每分钟"):
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("report_create",
			`{"name":"工单统计","cron":"* * * * *","skill":"it_ticket_weekly","target":"this_chat"}`)}}
	case strings.Contains(last.Content, "每天提"):
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("report_create",
			`{"name":"例行工单","cron":"0 9 * * *","skill":"it_ticket_create","args":{"title":"打印机","description":"例行检查"},"target":"this_chat"}`)}}
	case strings.Contains(last.Content, "每周一 9 点"):
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("report_create",
			`{"name":"上周工单统计","cron":"0 9 * * 1","skill":"it_ticket_weekly","target":"this_chat"}`)}}
	}
	return openaitest.Reply{Content: "好的。"}
}

// TestChatReportRefusalsAreSaid: in chat, a refused report reaches the
// model as the Chinese sentence, which it relays; a refusal when the user
// confirms (the last place was taken meanwhile) is said as it is.
func TestChatReportRefusalsAreSaid(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	h.Model.SetHandler(relayModel)
	ch := chantest.New("test", channels.Limits{MaxBytes: 4096, Format: channels.FormatMarkdown, Dialect: channels.DialectStandard})
	gw, rs := h.StartWithReports("reports:\n  scan_interval: 1h\n  max_per_user: 1\n", gateway.Deps{Channels: []channels.Channel{ch}, Now: clock.Now})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	say := func(id, text string) string {
		t.Helper()
		n := len(ch.Sent())
		gatewaytest.Accept(t, gw, ch.Message("a", id, "it-group", "zhangsan", text, true, true))
		sent, err := ch.WaitSent(ctx, n+1)
		if err != nil {
			t.Fatal(err)
		}
		h.WaitIdle(ctx)
		return sent[len(sent)-1].Text
	}
	if got := say("m1", "每分钟发一次工单统计"); !strings.Contains(got, "定时报告两次发送之间至少要隔 1 小时") {
		t.Errorf("every minute: %q", got)
	}
	if got := say("m2", "每天提一个工单"); !strings.Contains(got, "只能在管理员创建的定时报告里使用") {
		t.Errorf("a write skill: %q", got)
	}
	if got := say("m3", "每周一 9 点把上周工单统计发到这个群"); !strings.Contains(got, "确认") {
		t.Fatalf("a good report: %q, want a confirmation", got)
	}
	if _, err := rs.CreateReport(ctx, chatReport("另一个", "0 9 * * 2", "it_ticket_weekly", "")); err != nil {
		t.Fatal(err) // the last place goes meanwhile
	}
	if got := say("m4", "确认"); !strings.Contains(got, "每人最多可以在对话中创建 1 个定时报告") {
		t.Errorf("confirmed past the limit: %q", got)
	}
	if n := h.Count(`SELECT count(*) FROM reports`); n != 1 {
		t.Errorf("%d reports, want 1", n)
	}
}

func TestReportLimitsConfig(t *testing.T) {
	t.Parallel()
	base := "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"
	cfg, err := config.ParseConfig([]byte(base), gatewaytest.Env(nil))
	if err != nil || cfg.Reports.MinInterval != time.Hour || cfg.Reports.MaxPerUser != 10 {
		t.Fatalf("defaults: %+v %v", cfg.Reports, err)
	}
	for yaml, want := range map[string]string{
		"reports:\n  min_interval: 30s\n":  "reports.min_interval: must be between 1m0s and 168h0m0s, got 30s",
		"reports:\n  min_interval: -1h\n":  "reports.min_interval: must be between",
		"reports:\n  min_interval: 720h\n": "reports.min_interval: must be between",
		"reports:\n  max_per_user: -1\n":   "reports.max_per_user: must be between 1 and 1000, got -1",
	} {
		if _, err := config.ParseConfig([]byte(base+yaml), gatewaytest.Env(nil)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yaml, err, want)
		}
	}
}
