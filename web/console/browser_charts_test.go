package console_test

import (
	"context"
	"fmt"
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
	for _, period := range []string{"1h", "24h", "7d", "30d"} {
		got := map[string]chartTotal{}
		var since time.Time
		for _, page := range []string{"/", "/skills"} {
			if err := chromedp.Do(ctx, chromedp.Navigate(base+page+"?trend="+period), chromedp.WaitVisible(chromedp.CSS("#trends"))); err != nil {
				t.Fatalf("open %s: %v", page, err)
			}
			// The charts' first bucket, as the page says.
			attr, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#trends').dataset.since`))
			if err != nil {
				t.Fatal(err)
			}
			if since, err = time.Parse(time.RFC3339, attr); err != nil {
				t.Fatalf("data-since %q: %v", attr, err)
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
			checkSwatches(t, page+"?trend="+period, swatches)
		}
		for id, sql := range want {
			var n float64
			if err := f.pool.QueryRow(context.Background(), sql, since).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if g := got[id]; !g.Drawn || g.Sum != n {
				t.Errorf("%s over %s: drawn %v, table sums to %v; the database has %v", id, period, g.Drawn, g.Sum, n)
			}
		}
	}
}

// axisOverlaps reads, in the browser, every pair of neighbouring x axis
// labels of a chart that touch or overlap as drawn (their boxes on the
// page, 2 px apart at least), by chart id.
const axisOverlaps = `[...document.querySelectorAll('figure.chart .plot svg')].flatMap(svg => {
  const texts = [...svg.querySelectorAll('text')].filter(e => e.textContent.trim() !== '');
  const bottom = Math.max(...texts.map(e => +e.getAttribute('y')));
  const labels = texts.filter(e => +e.getAttribute('y') === bottom)
    .map(e => ({text: e.textContent, box: e.getBoundingClientRect()})).sort((a, b) => a.box.left - b.box.left);
  const out = [];
  for (let i = 1; i < labels.length; i++) {
    if (labels[i-1].box.right + 2 > labels[i].box.left) {
      out.push(svg.closest('figure').id + ': ' + labels[i-1].text + ' / ' + labels[i].text);
    }
  }
  return out;
})`

// checkAxes fails when two x axis labels of a chart meet on a page 960
// pixels wide, over each period.
func checkAxes(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(960, 900)); err != nil {
		t.Fatal(err)
	}
	defer chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)) //nolint:errcheck // the next navigation fails loudly
	for _, period := range []string{"1h", "24h", "7d", "30d"} {
		for _, page := range []string{"/", "/skills"} {
			if err := chromedp.Do(ctx, chromedp.Navigate(base+page+"?trend="+period), chromedp.WaitVisible(chromedp.CSS("#trends"))); err != nil {
				t.Fatalf("open %s: %v", page, err)
			}
			overlaps, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](axisOverlaps))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range overlaps {
				t.Errorf("%s?trend=%s at 960 px: axis labels meet: %s", page, period, o)
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

// drillTarget reads, in the browser, the busiest bucket of the stop
// reasons' table: its runs in the table, and the plot's link over it.
const drillTarget = `(() => {
  const fig = document.querySelector('#chart-stops');
  let best = null;
  for (const tr of fig.querySelectorAll('table.chart-table tr')) {
    const first = tr.querySelector('td a');
    if (!first) continue;
    let runs = 0;
    for (const td of tr.querySelectorAll('td.num')) runs += parseInt(td.textContent, 10) || 0;
    if (!best || runs > best.runs) best = {runs: runs, href: first.getAttribute('href')};
  }
  if (!best) return {runs: 0, bucket: -1};
  const a = [...fig.querySelectorAll('svg g.drill a')].find(a => a.getAttribute('href') === best.href);
  return {runs: best.runs, bucket: a ? +a.dataset.bucket : -1};
})()`

type drill struct {
	Runs, Bucket int
}

// checkDrillDown clicks the busiest bar of the stop reasons' chart and
// expects the runs list of exactly that bucket: as many runs as the
// table counted there.
func checkDrillDown(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/?trend=24h"), chromedp.WaitVisible(chromedp.CSS("#chart-stops svg"))); err != nil {
		t.Fatal(err)
	}
	target, err := chromedp.Run(ctx, chromedp.Evaluate[drill](drillTarget))
	if err != nil || target.Bucket < 0 || target.Runs == 0 {
		t.Fatalf("no bar of the stop reasons' chart to click: %+v, %v", target, err)
	}
	sel := fmt.Sprintf(`#chart-stops g.drill a[data-bucket="%d"] rect`, target.Bucket)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("#drill-filter"))); err != nil {
		t.Fatalf("click bucket %d: %v", target.Bucket, err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#run-list a[href^="/console/runs/"]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if rows != target.Runs {
		t.Errorf("the clicked bar counted %d runs; its runs list has %d", target.Runs, rows)
	}
}

// checkStopColors fails unless failures are drawn red and finished runs
// green, whatever other reasons the period has.
func checkStopColors(t *testing.T, swatches []legendSwatch) {
	t.Helper()
	want := map[string]string{"完成": "rgb(59, 162, 114)", "技能致命错误": "rgb(217, 63, 63)"}
	for _, s := range swatches {
		if c, ok := want[s.Name]; ok && s.Chart == "chart-stops" {
			if s.Color != c {
				t.Errorf("stop reason %s drawn in %s, want %s", s.Name, s.Color, c)
			}
			delete(want, s.Name)
		}
	}
	for name := range want {
		t.Errorf("stop reason %s not in the legend", name)
	}
}

// checkRefresh: the overview's trends section reloads itself in place —
// the request its every-minute trigger makes, made now, brings a message
// stored since into the headline without reloading the page.
func checkRefresh(t *testing.T, ctx context.Context, f *fixture, base string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/?trend=1h"), chromedp.WaitVisible(chromedp.CSS("#headline-messages"))); err != nil {
		t.Fatal(err)
	}
	read := `[document.querySelector('#trends').getAttribute('hx-trigger'), document.querySelector('#headline-messages .value').textContent,
	  String(window.hermesMarker || '')]`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.hermesMarker = 'same page'; true`)); err != nil {
		t.Fatal(err)
	}
	before, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](read))
	if err != nil {
		t.Fatal(err)
	}
	if before[0] != "every 60s" {
		t.Errorf("the trends reload on %q, want every 60s", before[0])
	}
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, text, status, received_at)
VALUES ('test', 'acc-1', 'refresh-1', 'text', 'c', 'single', 'u', '新消息', 'done', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.querySelector('#trends');
	  return htmx.ajax('GET', s.getAttribute('hx-get'), {target: '#trends', select: '#trends', swap: 'outerHTML'}).then(() => true); })()`,
		chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	after, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](read))
	if err != nil {
		t.Fatal(err)
	}
	var b, a int
	fmt.Sscan(before[1], &b)
	fmt.Sscan(after[1], &a)
	if a != b+1 || after[2] != "same page" {
		t.Errorf("after a refresh the headline counts %d messages (before %d), page kept: %q; want one more on the same page", a, b, after[2])
	}
}
