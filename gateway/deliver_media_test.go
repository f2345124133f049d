package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/dingtalk"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/reports"
)

// An image is uploaded once per part: a resend after a lost answer sends
// the media id of the first attempt, so the platform sees the same
// message twice (WeCom's duplicate check then drops the copy) rather than
// a new upload it cannot recognise.

// runChartReport creates the weekly ticket report with its chart to
// target and runs it now.
func runChartReport(t *testing.T, ctx context.Context, rs *reports.Service, target reports.TargetRef) {
	t.Helper()
	rep, err := rs.CreateReport(ctx, gatewaytest.WeeklyTickets(gatewaytest.AppOwner, reports.CatchUpSkip, target))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.RunReportNow(ctx, rep.ID, nil); err != nil {
		t.Fatal(err)
	}
}

func TestImageResentAfterALostAnswerIsOneMessageOnWeCom(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	_, rs := h.StartWithReports("reports:\n  scan_interval: 1h\n", gateway.Deps{Now: clock.Now})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	h.WeComAPI.LoseAnswers("image", 1) // WeCom delivers the chart; its answer is lost
	runChartReport(t, ctx, rs, reports.TargetRef{Channel: "wecom", Account: gatewaytest.App, ChatType: channels.ChatSingle, ChatID: "zhangsan"})
	h.WaitIdle(ctx)

	uploads := h.WeComAPI.Uploads()
	var images []wecomtest.SentMessage
	for _, m := range h.WeComAPI.Requests() {
		if m.MsgType == "image" {
			images = append(images, m)
		}
	}
	if len(uploads) != 1 || len(images) != 2 {
		t.Fatalf("%d uploads and %d image sends, want one upload sent twice", len(uploads), len(images))
	}
	if images[0].MediaID != uploads[0].MediaID || images[1].MediaID != uploads[0].MediaID {
		t.Fatalf("image sends name %q and %q, want the one upload %q", images[0].MediaID, images[1].MediaID, uploads[0].MediaID)
	}
	if images[1].EnableDuplicateCheck != 1 || !images[1].Duplicate {
		t.Fatalf("the resend %+v: want it to ask for the duplicate check and be dropped", images[1])
	}
	delivered := 0
	for _, m := range h.WeComAPI.Messages() {
		if m.MsgType == "image" {
			delivered++
		}
	}
	if delivered != 1 {
		t.Fatalf("the user got the chart %d times, want once", delivered)
	}
	if n := h.Count(`SELECT count(*) FROM outbox WHERE format = 'image' AND delivered_at IS NOT NULL AND media_id = $1`, uploads[0].MediaID); n != 1 {
		t.Fatalf("%d image parts delivered with the media id kept, want 1", n)
	}
}

func TestImageResentAfterALostAnswerIsOneUploadOnDingTalk(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	const appKey, appSecret = "dingmediaappkey", "media-app-secret-0123456789"
	ding := dingtalktest.NewServer(t, appKey, appSecret)
	_, rs := h.StartWithReports(fmt.Sprintf(`reports:
  scan_interval: 1h
dingtalk:
  robots:
    - name: ding-hr
      app_key: %s
      app_secret: %s
      corp_id: dingcorp
      api_base_url: %s
      oapi_base_url: %s
`, appKey, appSecret, ding.URL(), ding.URL()), gateway.Deps{Now: clock.Now, Platforms: []channels.Platform{wecom.Platform, dingtalk.Platform}})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	ding.LoseAnswers("sampleImageMsg", 1) // DingTalk posts the chart; its answer is lost
	runChartReport(t, ctx, rs, reports.TargetRef{Channel: "dingtalk", Account: "ding-hr", ChatType: channels.ChatSingle, ChatID: "zhangsan"})
	h.WaitIdle(ctx)

	uploads := ding.Uploads()
	var images []dingtalktest.Sent
	for _, s := range ding.Sent() {
		if s.MsgKey == "sampleImageMsg" {
			images = append(images, s)
		}
	}
	if len(uploads) != 1 || len(images) != 2 {
		t.Fatalf("%d uploads and %d image sends, want one upload sent twice", len(uploads), len(images))
	}
	if images[0].PhotoURL != uploads[0].MediaID || images[1].PhotoURL != uploads[0].MediaID {
		t.Fatalf("image sends name %q and %q, want the one upload %q", images[0].PhotoURL, images[1].PhotoURL, uploads[0].MediaID)
	}
}

func TestImageResentAfterALostAckIsOneUploadOnTheAIBot(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	ws := wecomtest.NewBotWSServer(t, wsBotID, wsSecret)
	echoModel(h)
	_, rs := h.StartWithReports(gatewaytest.WSBotYAML(ws.URL())+"reports:\n  scan_interval: 1h\n", gateway.Deps{Now: clock.Now})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	if _, err := ws.WaitSubscriptions(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	// The bot has been in the group: it answered a message there.
	hello := wecomtest.BotMessage{MsgID: "img-1", AIBotID: wsBotID, ChatID: "grp-img", ChatType: "group", UserID: "zhangsan"}
	if _, err := ws.PushMessage(ctx, hello.Text("@Hermes 你好")); err != nil {
		t.Fatal(err)
	}
	// Pushing returns once the frame is written: the answer says it was
	// stored, so the report's target is a chat that wrote to the bot.
	if _, err := ws.WaitFrame(ctx, func(f wecomtest.BotFrame) bool { return f.Cmd == "aibot_respond_msg" && f.Reply.Stream.Finish }); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)

	// The chart goes; its ack is lost with the socket.
	ws.FailNext("aibot_send_msg:image", wecomtest.DropConnection)
	runChartReport(t, ctx, rs, reports.TargetRef{Channel: "wecom", Account: botName, ChatType: channels.ChatGroup, ChatID: "grp-img"})
	h.WaitIdle(ctx)

	uploads := ws.Uploads()
	var images []wecomtest.BotFrame
	for _, f := range ws.Frames() {
		if f.Cmd == "aibot_send_msg" && f.Reply.MsgType == "image" {
			images = append(images, f)
		}
	}
	if len(uploads) != 1 || len(images) != 2 {
		t.Fatalf("%d uploads and %d image sends, want one upload sent twice", len(uploads), len(images))
	}
	if images[0].Reply.Image.MediaID != uploads[0].MediaID || images[1].Reply.Image.MediaID != uploads[0].MediaID {
		t.Fatalf("image sends name %q and %q, want the one upload %q",
			images[0].Reply.Image.MediaID, images[1].Reply.Image.MediaID, uploads[0].MediaID)
	}
	if images[0].Conn == images[1].Conn {
		t.Fatal("the resend went on the socket that was dropped")
	}
}

// A stored media id the platform has forgotten (WeCom keeps temporary
// media three days) is uploaded again before the part is sent.
func TestExpiredMediaIsUploadedAgain(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	_, rs := h.StartWithReports("reports:\n  scan_interval: 1h\n", gateway.Deps{Now: clock.Now})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	// The chart's first send loses its answer after the upload; the retry
	// comes four days later.
	h.WeComAPI.LoseAnswers("image", 1)
	runChartReport(t, ctx, rs, reports.TargetRef{Channel: "wecom", Account: gatewaytest.App, ChatType: channels.ChatSingle, ChatID: "zhangsan"})
	var uploaded bool
	for !uploaded { // until the first attempt stored its upload
		uploaded = h.Count(`SELECT count(*) FROM outbox WHERE format = 'image' AND media_id <> '' AND attempts = 1 AND delivered_at IS NULL`) == 1
		select {
		case <-ctx.Done():
			t.Fatal("the chart was never uploaded")
		case <-time.After(20 * time.Millisecond):
		}
	}
	clock.Add(4 * 24 * time.Hour)
	h.WaitIdle(ctx)
	uploads := h.WeComAPI.Uploads()
	if len(uploads) != 2 {
		t.Fatalf("%d uploads, want a second one for the expired media id", len(uploads))
	}
	last := h.WeComAPI.Requests()[len(h.WeComAPI.Requests())-1]
	if last.MsgType != "image" || last.MediaID != uploads[1].MediaID {
		t.Fatalf("the resend %+v, want the new upload %q", last, uploads[1].MediaID)
	}
}
