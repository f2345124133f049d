package gateway_test

import (
	"bytes"
	"errors"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/store"
)

// wecomOwner owns reports made on the WeCom app of the harness.
var wecomOwner = store.ReportOwner{Channel: "wecom", Account: testApp, Corp: testCorpID, User: "zhangsan", Name: "张三"}

func wecomReport(cron string, chatType, chatID string) gateway.NewReport {
	nr := weeklyTickets(gateway.CatchUpSkip, gateway.TargetRef{Channel: "wecom", Account: testApp, ChatType: chatType, ChatID: chatID})
	nr.Cron, nr.Owner = cron, wecomOwner
	return nr
}

// TestReportThroughWeComApp sends a report through the WeCom app to the
// fake WeCom API: the text, then the chart uploaded through the media API
// and sent as an image; a group chat, where an app cannot post, is
// refused at creation.
func TestReportThroughWeComApp(t *testing.T) {
	h, clock := clockedHarness(t)
	gw := h.startExtra("reports:\n  scan_interval: 1h\n", gateway.Deps{Now: clock.Now})
	ctx := withTimeout(t, 60*time.Second)

	if _, err := gw.CreateReport(ctx, wecomReport("0 9 * * 1", channels.ChatGroup, "wrkSFfCgAAxxx")); !errors.Is(err, channels.ErrCannotPush) {
		t.Fatalf("group target on an app: %v, want ErrCannotPush", err)
	}
	if _, err := gw.CreateReport(ctx, wecomReport("0 9 * * 1", channels.ChatSingle, "zhangsan")); err != nil {
		t.Fatal(err)
	}
	clock.Set(monday9)
	if n, err := gw.ScheduleReports(ctx); n != 1 || err != nil {
		t.Fatalf("tick: %d runs, %v", n, err)
	}
	msgs, err := h.wecomAPI.WaitMessages(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	text, image := msgs[0], msgs[1]
	if text.ToUser != "zhangsan" || text.MsgType != "text" || !strings.Contains(text.Content, "上周共新建工单 37 张") {
		t.Errorf("WeCom got the text %+v", text)
	}
	uploads := h.wecomAPI.Uploads()
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
	h, clock := clockedHarness(b)
	gw := h.startExtra("reports:\n  scan_interval: 1h\n", gateway.Deps{Now: clock.Now})
	ctx := withTimeout(b, 10*time.Minute)
	nr := wecomReport("* * * * *", channels.ChatSingle, "zhangsan")
	nr.Spec.Chart = nil
	if _, err := gw.CreateReport(ctx, nr); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		clock.Set(clock.Now().Add(time.Minute))
		start := time.Now()
		if n, err := gw.ScheduleReports(ctx); n != 1 || err != nil {
			b.Fatalf("tick %d: %d runs, %v", i, n, err)
		}
		if _, err := h.wecomAPI.WaitMessages(ctx, i+1); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	chantest.ReportPercentiles(b, lat, "ms")
}
