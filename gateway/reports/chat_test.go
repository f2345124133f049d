package reports_test

import (
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// reportModel plays the model of a chat that manages reports: 「每周一 9
// 点把上周工单统计发到这个群」 becomes report_create with a cron
// expression; 「我的定时报告」 lists; 「删除 1」 deletes report 1; anything
// else is answered plainly.
func reportModel(req openai.ChatCompletionRequest) openaitest.Reply {
	last := req.Messages[len(req.Messages)-1]
	if last.Role != openai.ChatMessageRoleUser {
		return openaitest.Reply{Content: "好的。"}
	}
	switch {
	case strings.Contains(last.Content, "每周一 9 点"):
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("report_create",
			`{"name":"上周工单统计","cron":"0 9 * * 1","skill":"it_ticket_weekly","target":"this_chat"}`)}}
	case strings.Contains(last.Content, "每天 25 点"):
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("report_create",
			`{"name":"坏报告","cron":"0 25 * * *","skill":"it_ticket_weekly","target":"this_chat"}`)}}
	case strings.Contains(last.Content, "删除"):
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("report_delete", `{"id":1}`)}}
	}
	return openaitest.Reply{Content: "好的。"}
}

func TestReportFromChatAsksForConfirmation(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	h.Model.SetHandler(reportModel)
	ch := chantest.New("test", channels.Limits{MaxBytes: 4096, Format: channels.FormatMarkdown, Dialect: channels.DialectStandard})
	clock.Set(time.Date(2026, 12, 1, 10, 0, 0, 0, gatewaytest.Shanghai)) // a Tuesday
	gw, _ := startReports(h, ch, clock)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	say := func(id, user, text string) string {
		t.Helper()
		n := len(ch.Sent())
		gatewaytest.Accept(t, gw, ch.Message("a", id, "it-group", user, text, true, true))
		sent, err := ch.WaitSent(ctx, n+1)
		if err != nil {
			t.Fatal(err)
		}
		h.WaitIdle(ctx)
		return sent[len(sent)-1].Text
	}

	ask := say("m1", "zhangsan", "每周一 9 点把上周工单统计发到这个群")
	for _, want := range []string{"确认", "每周一 09:00", "2026-12-07 09:00", "2026-12-14 09:00", "2026-12-21 09:00", "本会话"} {
		if !strings.Contains(ask, want) {
			t.Errorf("confirmation lacks %q: %s", want, ask)
		}
	}
	if n := h.Count(`SELECT count(*) FROM reports`); n != 0 {
		t.Fatalf("%d reports saved before 「确认」", n)
	}
	say("m2", "zhangsan", "确认")
	if n := h.Count(`SELECT count(*) FROM reports WHERE owner_user = 'zhangsan' AND cron = '0 9 * * 1' AND targets->0->>'chat_id' = 'it-group'`); n != 1 {
		t.Fatalf("%d reports after 「确认」, want 1", n)
	}

	// Bad input: the model's cron is refused and nothing is saved.
	say("m3", "zhangsan", "每天 25 点发工单统计")
	say("m4", "zhangsan", "确认")
	if n := h.Count(`SELECT count(*) FROM reports`); n != 1 {
		t.Errorf("%d reports after an invalid cron, want 1", n)
	}

	// Only the owner manages it: lisi cannot delete zhangsan's report.
	say("m5", "lisi", "删除定时报告 1")
	say("m6", "lisi", "确认")
	if n := h.Count(`SELECT count(*) FROM reports`); n != 1 {
		t.Errorf("another user deleted the report")
	}
	say("m7", "zhangsan", "删除定时报告 1")
	say("m8", "zhangsan", "确认")
	if n := h.Count(`SELECT count(*) FROM reports`); n != 0 {
		t.Errorf("the owner could not delete the report")
	}
}
