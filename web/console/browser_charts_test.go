package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chartTotals reads, in the browser, the sum of every number column of
// the table below each chart of the page, by chart id.
const chartTotals = `(() => {
  const out = {};
  for (const fig of document.querySelectorAll('figure.chart')) {
    const svg = fig.querySelector('.plot svg');
    let sum = 0;
    for (const td of fig.querySelectorAll('table.chart-table td.num')) {
      const v = parseFloat(td.textContent);
      if (!isNaN(v)) sum += v;
    }
    out[fig.id] = {drawn: svg !== null && svg.querySelectorAll('path').length > 0, sum: sum};
  }
  return out;
})()`

type chartTotal struct {
	Drawn bool
	Sum   float64
}

// chartsMatch opens the overview and the skills page over both periods
// and checks that each count chart is drawn and that its table adds up to
// what the database holds.
func chartsMatch(t *testing.T, ctx context.Context, f *fixture, base string) {
	t.Helper()
	want := map[string]string{
		"chart-traffic":     `SELECT count(*) FROM inbound_messages WHERE received_at >= $1`,
		"chart-stops":       `SELECT count(*) FROM runs WHERE started_at >= $1`,
		"chart-skill-calls": `SELECT count(*) FROM run_steps st JOIN runs r ON r.id = st.run_id WHERE st.kind = 'tool' AND r.started_at >= $1`,
	}
	for _, period := range []struct {
		name string
		d    time.Duration
	}{{"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}} {
		// The charts' first bucket starts on the hour.
		since := time.Now().Truncate(time.Hour).Add(time.Hour - period.d)
		got := map[string]chartTotal{}
		for _, page := range []string{"/", "/skills"} {
			if err := chromedp.Do(ctx, chromedp.Navigate(base+page+"?trend="+period.name), chromedp.WaitVisible(chromedp.CSS("#trends"))); err != nil {
				t.Fatalf("open %s: %v", page, err)
			}
			totals, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]chartTotal](chartTotals))
			if err != nil {
				t.Fatalf("charts of %s: %v", page, err)
			}
			for id, v := range totals {
				got[id] = v
			}
			swatches, err := chromedp.Run(ctx, chromedp.Evaluate[[]legendSwatch](legendSwatches))
			if err != nil {
				t.Fatalf("legends of %s: %v", page, err)
			}
			checkSwatches(t, page+"?trend="+period.name, swatches)
		}
		for id, sql := range want {
			var n float64
			if err := f.pool.QueryRow(context.Background(), sql, since).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if g := got[id]; !g.Drawn || g.Sum != n {
				t.Errorf("%s over %s: drawn %v, table sums to %v; the database has %v", id, period.name, g.Drawn, g.Sum, n)
			}
		}
	}
}

// legendSwatches reads, in the browser, the color each legend swatch is
// drawn in, by chart id and series name.
const legendSwatches = `[...document.querySelectorAll('figure.chart')].flatMap(fig =>
  [...fig.querySelectorAll('.legend .swatch')].map(sw => ({chart: fig.id,
    name: (sw.nextSibling && sw.nextSibling.textContent || '').trim(),
    color: getComputedStyle(sw).backgroundColor})))`

// legendSwatch is one legend entry as the user sees it.
type legendSwatch struct{ Chart, Name, Color string }

// checkSwatches fails when a legend swatch has no color (transparent, as
// html/template's ZgotmplZ left them) or two series of one chart share one.
func checkSwatches(t *testing.T, page string, swatches []legendSwatch) {
	t.Helper()
	seen := map[string]string{}
	for _, s := range swatches {
		if s.Color == "" || s.Color == "rgba(0, 0, 0, 0)" || s.Color == "transparent" {
			t.Errorf("%s: the legend of %s shows %q without a color (%q)", page, s.Chart, s.Name, s.Color)
			continue
		}
		if other, ok := seen[s.Chart+s.Color]; ok {
			t.Errorf("%s: %s draws %q and %q in one color %s", page, s.Chart, other, s.Name, s.Color)
		}
		seen[s.Chart+s.Color] = s.Name
	}
}

// fillHistory stores a day of made-up traffic before the fixture's
// message, hour by hour, so that the charts have a shape (and the
// screenshots something to show): messages on two accounts, runs that
// end for several reasons, skill calls of which some fail and a few are
// refused by an open breaker, breaker openings, a given-up reply, tokens
// of two models.
func fillHistory(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		`INSERT INTO sessions (channel, account, chat_id, user_id)
         SELECT 'test', 'acc-' || a, 'hist-chat-' || g, 'hist-user-' || g FROM generate_series(1, 20) g, generate_series(1, 2) a`,
		`INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, text, status, received_at)
         SELECT 'test', 'acc-' || (g % 2 + 1), 'hist-' || g, 'text', 'hist-chat-' || (g % 20 + 1), 'single', 'hist-user-' || (g % 20 + 1),
                '历史消息', 'done', now() - interval '23 hours' + (g % 23) * interval '1 hour' + (g % 7) * interval '1 minute'
         FROM generate_series(1, 400) g WHERE g % 23 < 8 + (g % 5) OR g % 3 = 0`,
		`INSERT INTO runs (id, session_id, inbound_id, model, stop_reason, prompt_tokens, completion_tokens, started_at, finished_at)
         SELECT 'hist-run-' || i.id, s.id, i.id, CASE WHEN i.id % 3 = 0 THEN 'deepseek-chat' ELSE 'test-model' END,
                CASE WHEN i.id % 17 = 0 THEN 'timeout' WHEN i.id % 11 = 0 THEN 'fatal_tool_error' ELSE 'finished' END,
                900 + i.id % 300, 120 + i.id % 80, i.received_at, i.received_at + (800 + (i.id * 37) % 3000) * interval '1 millisecond'
         FROM inbound_messages i JOIN sessions s ON s.channel = i.channel AND s.account = i.account AND s.chat_id = i.chat_id
              AND s.user_id = i.sender_id
         WHERE i.platform_msg_id LIKE 'hist-%'`,
		`INSERT INTO run_steps (run_id, seq, step, kind, tool, error, latency_ms)
         SELECT r.id, 1, 1, 'tool', CASE WHEN r.inbound_id % 2 = 0 THEN 'hr_leave_balance' ELSE 'it_ticket_create' END,
                CASE WHEN r.inbound_id % 29 = 0 THEN 'skill it_ticket_create is unavailable: circuit breaker is open after repeated failures'
                     WHEN r.inbound_id % 11 = 0 THEN 'skill it_ticket_create is unavailable (HTTP 503)' ELSE '' END,
                120 + (r.inbound_id * 53) % 900
         FROM runs r WHERE r.id LIKE 'hist-run-%'`,
		`INSERT INTO outbox (reply_key, part, channel, account, reply_to, text, attempts, last_error, failed_at)
         SELECT 'hist-answer:' || g, 0, 'test', 'acc-2', '{}', '…', 5, 'platform said 45009', now() - g * interval '3 hours'
         FROM generate_series(1, 4) g`,
		// The ticket system's breaker opened three times, once when no call
		// ran into it, and closed again after each.
		`INSERT INTO skill_breaker_events (skill, from_state, to_state, at)
         SELECT 'it_ticket_create', e.f, e.t, now() - g * interval '5 hours' + e.o * interval '1 minute'
         FROM generate_series(1, 3) g, (VALUES ('closed', 'open', 0), ('open', 'half-open', 5), ('half-open', 'closed', 6)) AS e(f, t, o)`,
	} {
		if tag, err := f.pool.Exec(ctx, sql); err != nil || tag.RowsAffected() == 0 {
			t.Fatalf("history: %v, %d rows\n%s", err, tag.RowsAffected(), sql)
		}
	}
}
