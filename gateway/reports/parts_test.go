package reports_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
)

// holdReportTexts makes every transaction that writes a report's text to
// the outbox wait, right after that row, until release is called: two
// runs then reach the outbox together, as they can when a tick and a
// run-now fall at the same moment. It is a trigger on the test's own
// database, holding back our code without changing it.
func holdReportTexts(t *testing.T, h *gatewaytest.Harness, ctx context.Context) (release func()) {
	t.Helper()
	const gate = 4242
	for _, q := range []string{
		`CREATE FUNCTION test_hold_report_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.reply_key LIKE 'report:%' AND NEW.reply_key NOT LIKE '%:chart' THEN
    PERFORM pg_advisory_xact_lock_shared(4242);
  END IF;
  RETURN NEW;
END $$`,
		`CREATE TRIGGER test_hold_report_text AFTER INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION test_hold_report_text()`,
	} {
		if _, err := h.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := h.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, gate); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, gate); err != nil {
			t.Error(err)
		}
		conn.Release()
	}
}

// waitFor polls query (a count) until it reaches n.
func waitRows(h *gatewaytest.Harness, ctx context.Context, n int, query string, args ...any) {
	h.T.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for h.Count(query, args...) < n {
		select {
		case <-ctx.Done():
			h.T.Fatalf("waited for %d of %s: %v", n, query, ctx.Err())
		case <-tick.C:
		}
	}
}

// scheduleTick scans at the clock's time and checks that report id's
// tick at fireAt was claimed once: by this scan, or by the gateway's own
// periodic one, which starts with the gateway and may run late under
// load, at the moment the test scans. Either way the claim is committed
// when ScheduleReports returns (the loser of the unique claim waits for
// it), so the count is exact.
func scheduleTick(t testing.TB, h *gatewaytest.Harness, ctx context.Context, rs *reports.Service, id int64, fireAt time.Time) {
	t.Helper()
	if _, err := rs.ScheduleReports(ctx); err != nil {
		t.Fatalf("scan at %s: %v", fireAt, err)
	}
	if n := h.Count(`SELECT count(*) FROM report_runs WHERE report_id = $1 AND fire_at = $2`, id, fireAt); n != 1 {
		t.Fatalf("tick at %s: %d runs, want 1", fireAt, n)
	}
}

// TestReportPartsGoOutTogether: two runs of one report to the same chat
// at the same moment each deliver their text and its chart one after the
// other, never one run's chart between the other's text and chart.
func TestReportPartsGoOutTogether(t *testing.T) {
	t.Parallel()
	h, ch, clock := reportRig(t)
	_, rs := startReports(h, ch, clock)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	nr := gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpRunOnce, group("it-group"))
	nr.ByAdmin = true
	rep, err := rs.CreateReport(ctx, nr)
	if err != nil {
		t.Fatal(err)
	}
	release := holdReportTexts(t, h, ctx)
	// Nothing is delivered until both runs have written their parts, so
	// the platform sees the conversation's order as written: the delivery
	// layer's own per-chat lock, held here.
	deliveries, ok, err := store.TryLock(ctx, h.Pool, "deliver:test/a/it-group")
	if err != nil || !ok {
		t.Fatalf("delivery lock: %v %v", ok, err)
	}
	for range 2 {
		if _, err := rs.RunReportNow(ctx, rep.ID, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Both runs are in their transaction, each held at a lock: at the
	// gate after its text, or waiting for the chat while the other is.
	waitRows(h, ctx, 2, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	release()
	waitRows(h, ctx, 2, `SELECT count(*) FROM report_runs WHERE report_id = $1 AND status = 'done'`, rep.ID)
	deliveries.Unlock(ctx)

	sent, err := ch.WaitSent(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	runOf := func(out channels.Outbound) string { return strings.Split(out.Key, ":")[1] }
	for i := 0; i < 4; i += 2 {
		text, chart := sent[i], sent[i+1]
		if text.Format == channels.FormatImage || chart.Format != channels.FormatImage || runOf(text) != runOf(chart) {
			t.Fatalf("parts arrived as %s, %s, %s, %s; want each run's text then its chart", sent[0].Key, sent[1].Key, sent[2].Key, sent[3].Key)
		}
	}
	if runOf(sent[0]) == runOf(sent[2]) {
		t.Errorf("one run delivered twice: %s, %s", sent[0].Key, sent[2].Key)
	}
}
