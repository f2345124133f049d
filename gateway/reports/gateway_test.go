package reports_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
)

// zhangsan owns the test reports (a demo employee the backend knows).
var zhangsan = store.ReportOwner{Channel: "test", Account: "a", Corp: "corp-test", User: "zhangsan", Name: "张三", Chat: "it-group"}

func group(chat string) reports.TargetRef {
	return reports.TargetRef{Channel: "test", Account: "a", ChatType: channels.ChatGroup, ChatID: chat}
}

// reportRig is a harness whose channel shows pictures, on a fake clock.
func reportRig(t *testing.T) (*gatewaytest.Harness, *chantest.Channel, *chantest.Clock) {
	ch := chantest.New("test", channels.Limits{MaxBytes: 4096, Format: channels.FormatMarkdown, Dialect: channels.DialectStandard, Images: true})
	h, clock := gatewaytest.NewClocked(t)
	return h, ch, clock
}

// startReports runs a gateway on ch and clock whose scanner waits an
// hour (the tests scan themselves), with its reports service.
func startReports(h *gatewaytest.Harness, ch channels.Channel, clock *chantest.Clock) (*gateway.Gateway, *reports.Service) {
	return h.StartWithReports("reports:\n  scan_interval: 1h\n", gateway.Deps{Channels: []channels.Channel{ch}, Now: clock.Now})
}

func TestReportTickTwoReplicasOneRun(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h, ch, clock := reportRig(t)
	_, a := startReports(h, ch, clock)
	_, b := startReports(h, ch, clock)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	rep, err := a.CreateReport(ctx, gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpRunOnce, group("it-group")))
	if err != nil {
		t.Fatal(err)
	}
	for week := range 3 {
		clock.Set(gatewaytest.Monday9.AddDate(0, 0, 7*week).Add(time.Second))
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		for _, rs := range []*reports.Service{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := rs.ScheduleReports(ctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}()
		}
		wg.Wait()
		// Each replica's scanner also scans once when it starts, which on
		// a loaded machine may come after the clock moved: the claim that
		// counts is the one in the table, whoever made it.
		if runs := h.Count(`SELECT count(*) FROM report_runs WHERE report_id = $1`, rep.ID); total > 1 || runs != week+1 {
			t.Fatalf("week %d: %d runs claimed by these scans, %d runs in all; want one per week", week, total, runs)
		}
		h.WaitIdle(ctx) // a week apart
	}
	h.WaitIdle(ctx)
	if n := h.Count(`SELECT count(*) FROM report_runs WHERE report_id = $1 AND status = 'done'`, rep.ID); n != 3 {
		t.Errorf("%d runs done, want 3", n)
	}
	sent := ch.Sent()
	if len(sent) != 6 {
		t.Fatalf("%d sends, want 3 texts and 3 pictures", len(sent))
	}
	text, pic := sent[0], sent[1]
	if !strings.Contains(text.Text, "上周共新建工单 37 张") || text.Answer || chantest.AddressOf(text).ChatID != "it-group" {
		t.Errorf("report text: %+v", text)
	}
	if pic.Format != channels.FormatImage || pic.Image == nil {
		t.Fatalf("second part is not the chart: %+v", pic)
	}
	img, err := png.Decode(bytes.NewReader(pic.Image.PNG))
	if err != nil || img.Bounds().Dx() != reports.ChartWidth {
		t.Errorf("chart: %v %v", err, img.Bounds())
	}
	// The skill ran as the owner, signed like any call.
	for _, c := range h.Backend.Calls() {
		if c.Path == "/it/tickets/weekly" && c.Identity.UserID != "zhangsan" {
			t.Errorf("report skill ran as %q", c.Identity.UserID)
		}
	}
	hist, err := store.ReportHistory(ctx, h.Pool, rep.ID, 10)
	if err != nil || len(hist) != 3 || hist[0].Deliveries[0].Status != store.DeliveryDelivered {
		t.Errorf("history: %+v %v", hist, err)
	}
}

// TestReportScannerRunsOnAFullReplica: a full replica's scanner (the
// reports feature's Run) claims a due tick by itself, every
// reports.scan_interval, and the report goes out.
func TestReportScannerRunsOnAFullReplica(t *testing.T) {
	t.Parallel()
	h, ch, clock := reportRig(t)
	_, rs := h.StartWithReports("reports:\n  scan_interval: 20ms\n", gateway.Deps{Channels: []channels.Channel{ch}, Now: clock.Now})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	rep, err := rs.CreateReport(ctx, gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpSkip, group("it-group")))
	if err != nil {
		t.Fatal(err)
	}
	clock.Set(gatewaytest.Monday9.Add(time.Second))
	if _, err := ch.WaitSent(ctx, 2); err != nil {
		t.Fatalf("the tick was not sent: %v", err)
	}
	waitRows(h, ctx, 1, `SELECT count(*) FROM report_runs WHERE report_id = $1 AND trigger = 'schedule' AND status = 'done'`, rep.ID)
}

func TestReportRestartAcrossTick(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		catchUp string
		runs    int
	}{{reports.CatchUpRunOnce, 1}, {reports.CatchUpSkip, 0}} {
		t.Run(tc.catchUp, func(t *testing.T) {
			h, ch, clock := reportRig(t)
			ctx := gatewaytest.WithTimeout(t, 60*time.Second)
			first, firstReports := startReports(h, ch, clock)
			rep, err := firstReports.CreateReport(ctx, gatewaytest.WeeklyTickets(zhangsan, tc.catchUp, group("it-group")))
			if err != nil {
				t.Fatal(err)
			}
			stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := first.Stop(stopCtx); err != nil {
				t.Fatal(err)
			}
			// Down across two Mondays; back an hour after the second.
			clock.Set(gatewaytest.Monday9.AddDate(0, 0, 7).Add(time.Hour))
			// The new replica scans at start; a scan more changes nothing.
			_, second := startReports(h, ch, clock)
			if _, err := second.ScheduleReports(ctx); err != nil {
				t.Fatal(err)
			}
			h.WaitIdle(ctx)
			if got := h.Count(`SELECT count(*) FROM report_runs WHERE report_id = $1`, rep.ID); got != tc.runs {
				t.Errorf("%d runs after the restart, want %d", got, tc.runs)
			}
			if got := h.Count(`SELECT count(*) FROM report_runs WHERE report_id = $1 AND trigger = 'catch_up' AND status = 'done'
				AND fire_at = $2`, rep.ID, gatewaytest.Monday9.AddDate(0, 0, 7)); got != tc.runs {
				t.Errorf("%d catch-up runs of the latest missed tick, want %d", got, tc.runs)
			}
			// Nothing more until the next tick, which runs on time.
			if n, _ := second.ScheduleReports(ctx); n != 0 {
				t.Errorf("a second scan claimed %d more", n)
			}
			clock.Set(gatewaytest.Monday9.AddDate(0, 0, 14))
			scheduleTick(t, h, ctx, second, rep.ID, gatewaytest.Monday9.AddDate(0, 0, 14))
		})
	}
}

func TestReportUnreachableTargetIsRecordedFailure(t *testing.T) {
	t.Parallel()
	h, ch, clock := reportRig(t)
	_, rs := startReports(h, ch, clock)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	// The platform refuses sends to the left group (the bot was removed
	// after the report was made).
	ch.FailWith(func(out channels.Outbound) error {
		if chantest.AddressOf(out).ChatID == "left-group" {
			return fmt.Errorf("not a member of the chat: %w", channels.ErrPermanent)
		}
		return nil
	})
	rep, err := rs.CreateReport(ctx, gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpRunOnce, group("left-group"), group("it-group")))
	if err != nil {
		t.Fatal(err)
	}
	runID, err := rs.RunReportNow(ctx, rep.ID, &zhangsan)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	ds, err := store.RunDeliveries(ctx, h.Pool, runID)
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries %+v %v", ds, err)
	}
	if ds[0].Status != store.DeliveryFailed || !strings.Contains(ds[0].Error, "not a member") {
		t.Errorf("unreachable target: %+v", ds[0])
	}
	if ds[1].Status != store.DeliveryDelivered {
		t.Errorf("reachable target: %+v", ds[1])
	}
}

func TestReportTextTableWhereNoImages(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	ch := chantest.New("test", channels.Limits{MaxBytes: 4096, Format: channels.FormatMarkdown, Dialect: channels.DialectBasic})
	_, rs := startReports(h, ch, clock)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	rep, err := rs.CreateReport(ctx, gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpRunOnce, group("it-group")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.RunReportNow(ctx, rep.ID, nil); err != nil {
		t.Fatal(err)
	}
	sent, err := ch.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if len(ch.Sent()) != 1 || sent[0].Format == channels.FormatImage || !strings.Contains(sent[0].Text, "网络故障 | 12 | 10") {
		t.Errorf("want one text with the table as lines, got %+v", ch.Sent())
	}
}

func TestBadReportSavesNothing(t *testing.T) {
	t.Parallel()
	h, ch, clock := reportRig(t)
	ch.Unreachable("secret-group")
	_, rs := startReports(h, ch, clock)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	wangwu := zhangsan
	wangwu.User = "wangwu"
	for name, mut := range map[string]func(*reports.NewReport){
		"cron":       func(r *reports.NewReport) { r.Cron = "0 9 * *" },
		"zone":       func(r *reports.NewReport) { r.TZ = "Mars/Olympus" },
		"catch_up":   func(r *reports.NewReport) { r.CatchUp = "sometimes" },
		"no target":  func(r *reports.NewReport) { r.Targets = nil },
		"channel":    func(r *reports.NewReport) { r.Targets[0].Channel = "feishu" },
		"not in":     func(r *reports.NewReport) { r.Targets[0].ChatID = "secret-group" },
		"skill":      func(r *reports.NewReport) { r.Spec.Skill = "hr_fire_everyone" },
		"confirm":    func(r *reports.NewReport) { r.Spec.Skill = "it_password_reset" },
		"chart":      func(r *reports.NewReport) { r.Spec.Chart.Type = "radar" },
		"both kinds": func(r *reports.NewReport) { r.Spec.Prompt = "写周报" },
		"template":   func(r *reports.NewReport) { r.Spec.Template = "{{.Data" },
	} {
		nr := gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpRunOnce, group("it-group"))
		mut(&nr)
		if _, err := rs.CreateReport(ctx, nr); !errors.Is(err, reports.ErrBadReport) {
			t.Errorf("%s: err %v, want ErrBadReport", name, err)
		}
	}
	if n := h.Count(`SELECT count(*) FROM reports`); n != 0 {
		t.Errorf("%d reports saved", n)
	}
}

// A report to 500 users is paced under the account's per-minute limit and
// reaches every one of them exactly once.
func TestReportToFiveHundredUsersLosesNone(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h, clock := gatewaytest.NewClocked(t)
	// 30,000 a minute: 500 a second, so the pacing shows but the test stays short.
	ch := chantest.New("test", channels.Limits{MaxBytes: 4096, Format: channels.FormatMarkdown,
		Dialect: channels.DialectStandard, AccountPerMinute: 30000})
	_, rs := startReports(h, ch, clock)
	ctx := gatewaytest.WithTimeout(t, 120*time.Second)
	targets := make([]reports.TargetRef, 500)
	for i := range targets {
		targets[i] = reports.TargetRef{Channel: "test", Account: "a", ChatType: channels.ChatSingle, ChatID: fmt.Sprintf("u%03d", i)}
	}
	nr := gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpSkip, targets...)
	nr.Spec.Chart = nil
	rep, err := rs.CreateReport(ctx, nr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.RunReportNow(ctx, rep.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.WaitSent(ctx, 500); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	got := map[string]int{}
	for _, out := range ch.Sent() {
		got[chantest.AddressOf(out).ChatID]++
	}
	if len(got) != 500 || len(ch.Sent()) != 500 {
		t.Fatalf("%d users got %d messages, want 500 each once", len(got), len(ch.Sent()))
	}
}
