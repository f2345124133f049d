package reports_test

import (
	"bytes"
	"errors"
	"image/png"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
)

func wecomReport(cron string, chatType, chatID string) reports.NewReport {
	nr := gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpSkip, reports.TargetRef{Channel: "wecom", Account: gatewaytest.App, ChatType: chatType, ChatID: chatID})
	nr.Cron, nr.Owner = cron, gatewaytest.AppOwner
	return nr
}

// TestReportThroughWeComApp sends a report through the WeCom app to the
// fake WeCom API: the text, then the chart uploaded through the media API
// and sent as an image; a group chat, where an app cannot post, is
// refused at creation.
func TestReportThroughWeComApp(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	_, rs := h.StartWithReports("reports:\n  scan_interval: 1h\n", gateway.Deps{Now: clock.Now})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)

	if _, err := rs.CreateReport(ctx, wecomReport("0 9 * * 1", channels.ChatGroup, "wrkSFfCgAAxxx")); !errors.Is(err, channels.ErrCannotPush) {
		t.Fatalf("group target on an app: %v, want ErrCannotPush", err)
	}
	rep, err := rs.CreateReport(ctx, wecomReport("0 9 * * 1", channels.ChatSingle, "zhangsan"))
	if err != nil {
		t.Fatal(err)
	}
	clock.Set(gatewaytest.Monday9)
	scheduleTick(t, h, ctx, rs, rep.ID, gatewaytest.Monday9)
	msgs, err := h.WeComAPI.WaitMessages(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	text, image := msgs[0], msgs[1]
	if text.ToUser != "zhangsan" || text.MsgType != "text" || !strings.Contains(text.Content, "上周共新建工单 37 张") {
		t.Errorf("WeCom got the text %+v", text)
	}
	uploads := h.WeComAPI.Uploads()
	if image.ToUser != "zhangsan" || image.MsgType != "image" || len(uploads) != 1 || image.MediaID != uploads[0].MediaID {
		t.Fatalf("WeCom got the image %+v after uploads %d, want the uploaded chart", image, len(uploads))
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(uploads[0].Data)); err != nil || cfg.Width == 0 {
		t.Fatalf("the uploaded chart does not decode as a PNG: %v", err)
	}
}

// BenchmarkReportTickToMessage measures the time from a tick (the
// scheduler's scan at the fire time, on the injected clock) to the
// report's message at the fake WeCom API: the claim and job, the skill
// call as the owner, the outbox and the delivery. Run with -benchtime 100x.
func BenchmarkReportTickToMessage(b *testing.B) {
	h, clock := gatewaytest.NewClocked(b)
	_, rs := h.StartWithReports("reports:\n  scan_interval: 1h\n", gateway.Deps{Now: clock.Now})
	ctx := gatewaytest.WithTimeout(b, 10*time.Minute)
	nr := wecomReport("* * * * *", channels.ChatSingle, "zhangsan")
	nr.Spec.Chart, nr.ByAdmin = nil, true // every minute: only an operator may
	if _, err := rs.CreateReport(ctx, nr); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		clock.Set(clock.Now().Add(time.Minute))
		start := time.Now()
		if n, err := rs.ScheduleReports(ctx); n != 1 || err != nil {
			b.Fatalf("tick %d: %d runs, %v", i, n, err)
		}
		if _, err := h.WeComAPI.WaitMessages(ctx, i+1); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	chantest.ReportPercentiles(b, lat, "ms")
}

// TestReportTargetOnLongConnectionBotNeedsFirstContact: a WeCom AI bot on
// the long connection may push only into a conversation where someone
// spoke to it first. A target there is refused, naming the chat, until a
// message from that chat has arrived on that bot (an event does not
// count); then it is accepted and the report is pushed there.
func TestReportTargetOnLongConnectionBotNeedsFirstContact(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	ws := wecomtest.NewBotWSServer(t, gatewaytest.WSBotID, gatewaytest.WSSecret)
	h.Model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply { return openaitest.Reply{Content: "你好"} })
	_, rs := h.StartWithReports(gatewaytest.WSBotYAML(ws.URL())+"reports:\n  scan_interval: 1h\n", gateway.Deps{Now: clock.Now})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	if _, err := ws.WaitSubscriptions(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	report := func(chatType, chat string) reports.NewReport {
		nr := gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpSkip, reports.TargetRef{Channel: "wecom", Account: gatewaytest.BotName, ChatType: chatType, ChatID: chat})
		nr.Owner, nr.Spec.Chart, nr.ByAdmin = store.ReportOwner{Channel: "wecom", Account: gatewaytest.BotName, Corp: gatewaytest.CorpID, User: "zhangsan"}, nil, true
		return nr
	}
	for _, tc := range []struct{ chatType, chat string }{{channels.ChatGroup, "grp-9"}, {channels.ChatSingle, "zhangsan"}} {
		_, err := rs.CreateReport(ctx, report(tc.chatType, tc.chat))
		var r *reports.Refusal
		if !errors.Is(err, channels.ErrCannotPush) || !errors.As(err, &r) || !strings.Contains(r.Sentence, "会话 "+tc.chat+" 还没有给机器人发过消息") {
			t.Fatalf("%s %s never seen: %v, want refused naming the chat", tc.chatType, tc.chat, err)
		}
	}
	// zhangsan opens the private chat (an event) and writes in the group.
	opened := wecomtest.BotMessage{MsgID: "ev-1", AIBotID: gatewaytest.WSBotID, ChatType: "single", UserID: "zhangsan", CreateTime: clock.Now().Unix()}
	if _, err := ws.PushEvent(ctx, opened.EnterChat()); err != nil {
		t.Fatal(err)
	}
	spoke := wecomtest.BotMessage{MsgID: "ws-1", AIBotID: gatewaytest.WSBotID, ChatID: "grp-9", ChatType: "group", UserID: "zhangsan"}
	if _, err := ws.PushMessage(ctx, spoke.Text("@Hermes 你好")); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.WaitFrame(ctx, func(f wecomtest.BotFrame) bool { return f.Cmd == "aibot_respond_msg" && f.Reply.Stream.Finish }); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if _, err := rs.CreateReport(ctx, report(channels.ChatSingle, "zhangsan")); !errors.Is(err, channels.ErrCannotPush) {
		t.Errorf("private chat only opened, never written in: %v, want refused", err)
	}
	rep, err := rs.CreateReport(ctx, report(channels.ChatGroup, "grp-9"))
	if err != nil {
		t.Fatalf("the group wrote to the bot: %v", err)
	}
	if _, err := rs.RunReportNow(ctx, rep.ID, nil); err != nil {
		t.Fatal(err)
	}
	pushed, err := ws.WaitFrame(ctx, func(f wecomtest.BotFrame) bool {
		return f.Cmd == "aibot_send_msg" && strings.Contains(f.Reply.Markdown.Content, "上周共新建工单 37 张")
	})
	if err != nil || pushed.Reply.ChatID != "grp-9" {
		t.Fatalf("pushed %+v %v, want the report in grp-9", pushed, err)
	}
}
