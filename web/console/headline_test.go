package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/web/console"
)

// TestHeadlineComparesWithThePeriodBefore: the overview's headline gives
// the chosen period's messages, failure rate, answer p95 and cost, each
// against the period of the same length before it, from runs stored on
// both sides of the boundary; a worse failure rate and a slower p95 are
// marked bad. Narrowed to one account, the headline and the charts count
// that account's messages and runs only.
func TestHeadlineComparesWithThePeriodBefore(t *testing.T) {
	pool := openPool(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 15, 30, 0, 0, time.Local)
	var session int64
	if err := pool.QueryRow(ctx, `INSERT INTO sessions (channel, account, chat_id, user_id) VALUES ('wecom', 'app', 'c', 'u') RETURNING id`).Scan(&session); err != nil {
		t.Fatal(err)
	}
	// The 24-hour view's first bucket starts at 16:00 yesterday; the
	// period before is as long as the one until now, 23.5 hours.
	since := time.Date(2026, 12, 4, 16, 0, 0, 0, time.Local)
	add := func(n int, at time.Time, stop string, took time.Duration, tokens int) {
		t.Helper()
		for i := range n {
			var in int64
			msg := at.Format("150405") + stop + itoa(int64(i))
			if err := pool.QueryRow(ctx, `INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, status, received_at)
VALUES ('wecom', 'app', $1, 'text', 'c', 'single', 'u', 'done', $2) RETURNING id`, msg, at).Scan(&in); err != nil {
				t.Fatal(err)
			}
			if err := store.InsertRun(ctx, pool, store.RunRecord{ID: "run-" + msg, SessionID: session, InboundID: in, Model: "qwen-plus",
				StopReason: stop, PromptTokens: tokens, StartedAt: at, FinishedAt: at.Add(took)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Before: 10 runs, 1 failed, answers in 1 s, 100,000 tokens.
	add(9, since.Add(-2*time.Hour), "finished", time.Second, 10_000)
	add(1, since.Add(-2*time.Hour), "fatal_tool_error", time.Second, 10_000)
	// Now: 20 runs, 4 failed, answers in 2 s, 300,000 tokens.
	add(16, since.Add(3*time.Hour), "finished", 2*time.Second, 15_000)
	add(4, since.Add(3*time.Hour), "error", 2*time.Second, 15_000)

	// Another account's runs count only when no account is chosen.
	var other int64
	if err := pool.QueryRow(ctx, `INSERT INTO sessions (channel, account, chat_id, user_id) VALUES ('feishu', 'bot', 'c', 'u') RETURNING id`).Scan(&other); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		var in int64
		at := since.Add(4 * time.Hour)
		if err := pool.QueryRow(ctx, `INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, status, received_at)
VALUES ('feishu', 'bot', $1, 'text', 'c', 'single', 'u', 'done', $2) RETURNING id`, "other-"+itoa(int64(i)), at).Scan(&in); err != nil {
			t.Fatal(err)
		}
		if err := store.InsertRun(ctx, pool, store.RunRecord{ID: "run-other-" + itoa(int64(i)), SessionID: other, InboundID: in, Model: "qwen-plus",
			StopReason: "error", PromptTokens: 1, StartedAt: at, FinishedAt: at.Add(time.Minute)}, nil); err != nil {
			t.Fatal(err)
		}
	}

	// The 16 finished runs of the period asked by employees of two
	// departments.
	if _, err := pool.Exec(ctx, `UPDATE runs SET departments = '{hr,it}' WHERE stop_reason = 'finished' AND started_at >= $1`, since); err != nil {
		t.Fatal(err)
	}
	costs := config.CostsConfig{Models: map[string]config.ModelPrice{"qwen-plus": {Prompt: 10}}, Budgets: map[string]float64{"wecom/app": 5}}
	c := console.New(console.Deps{Store: store.NewConsole(pool), Logger: discard(), Now: func() time.Time { return now }, Costs: costs})
	base, cl := serveAsAdmin(t, pool, c)
	status, body := get(t, cl, base+"/console/?trend=24h")
	if status != http.StatusOK {
		t.Fatalf("overview: %d", status)
	}
	if got := figure(t, body, "headline-messages"); !strings.HasPrefix(got, "25 ") {
		t.Errorf("every account: %q messages, want 25", got)
	}
	// Costs by account: the period's 3.00, the month's 4.00 (the period
	// before is in December too), 80% of the budget of 5 — marked.
	if got := tableRows(t, body, "costs-accounts"); strings.Join(got, "\n") != strings.Join([]string{
		"feishu/bot|5|0.00|0.00|–|–", "wecom/app|20|3.00|4.00|5.00|80.0%"}, "\n") {
		t.Errorf("costs by account:\n%s", strings.Join(got, "\n"))
	}
	if !strings.Contains(body, `<td class="num bad">80.0%</td>`) {
		t.Error("80% of the budget used is not marked")
	}
	// By department: a run of both departments counts in each.
	if got := tableRows(t, body, "costs-departments"); strings.Join(got, "\n") != strings.Join([]string{
		"hr|16|2.40", "it|16|2.40", "（未知部门）|9|0.60"}, "\n") {
		t.Errorf("costs by department:\n%s", strings.Join(got, "\n"))
	}
	status, body = get(t, cl, base+"/console/?trend=24h&account=wecom/app")
	if status != http.StatusOK {
		t.Fatalf("overview of one account: %d", status)
	}
	// The charts are narrowed too: only this account's line, only its runs.
	if rows := chartRows(t, body, "chart-traffic"); strings.Join(rows[0], "|") != "时段|wecom / app" {
		t.Errorf("traffic chart of wecom/app has columns %q", rows[0])
	}
	if n := sumColumn(t, chartRows(t, body, "chart-stops"), "模型错误"); n != 4 {
		t.Errorf("stop chart of wecom/app counts %d model errors, want 4", n)
	}
	for id, want := range map[string]string{
		"headline-messages": "20 较上一时段 +100%",
		"headline-failures": "20.0% 较上一时段 +10.0 个百分点",
		"headline-p95":      "2s 较上一时段 +100%",
		"headline-cost":     "3.00 较上一时段 +200%",
	} {
		if got := figure(t, body, id); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	for _, id := range []string{"headline-failures", "headline-p95"} {
		if !regexp.MustCompile(`id="` + id + `">(?s:.*?)class="change bad"`).MatchString(body) {
			t.Errorf("%s is not marked worse", id)
		}
	}
}

// figure is a headline figure's value and change, as text.
func figure(t *testing.T, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)id="` + id + `"><div class="muted">[^<]*</div>\s*<div class="value">([^<]*)</div><div class="change[^"]*">([^<]*)</div>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no headline figure %s on the page", id)
	}
	return strings.TrimSpace(m[1]) + " " + strings.TrimSpace(m[2])
}

// tableRows are the data rows of table id as "cell|cell|…".
func tableRows(t *testing.T, body, id string) []string {
	t.Helper()
	i := strings.Index(body, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no table %s on the page", id)
	}
	section := body[i:]
	section = section[:strings.Index(section, "</table>")]
	var out []string
	for _, tr := range regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(section, -1) {
		var cells []string
		for _, td := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(tr[1], -1) {
			cells = append(cells, strings.TrimSpace(td[1]))
		}
		if len(cells) > 0 {
			out = append(out, strings.Join(cells, "|"))
		}
	}
	return out
}

// TestCustomRangeOfDays: ?trend=custom&from=…&to=… charts and heads the
// chosen local days only, in quarter-day buckets for three days, with
// the headline against the three days before; a range the wrong way
// round says so and shows the default period.
func TestCustomRangeOfDays(t *testing.T) {
	pool := openPool(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 15, 30, 0, 0, time.Local)
	var session int64
	if err := pool.QueryRow(ctx, `INSERT INTO sessions (channel, account, chat_id, user_id) VALUES ('wecom', 'app', 'c', 'u') RETURNING id`).Scan(&session); err != nil {
		t.Fatal(err)
	}
	add := func(n int, at time.Time) {
		t.Helper()
		for i := range n {
			var in int64
			msg := at.Format("0102150405") + itoa(int64(i))
			if err := pool.QueryRow(ctx, `INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, status, received_at)
VALUES ('wecom', 'app', $1, 'text', 'c', 'single', 'u', 'done', $2) RETURNING id`, msg, at).Scan(&in); err != nil {
				t.Fatal(err)
			}
			if err := store.InsertRun(ctx, pool, store.RunRecord{ID: "run-" + msg, SessionID: session, InboundID: in, Model: "m",
				StopReason: "finished", StartedAt: at, FinishedAt: at.Add(time.Second)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(5, time.Date(2026, 12, 2, 10, 0, 0, 0, time.Local))  // inside
	add(3, time.Date(2026, 11, 29, 10, 0, 0, 0, time.Local)) // the three days before
	add(7, time.Date(2026, 12, 4, 10, 0, 0, 0, time.Local))  // after

	c := console.New(console.Deps{Store: store.NewConsole(pool), Logger: discard(), Now: func() time.Time { return now }})
	base, cl := serveAsAdmin(t, pool, c)
	status, body := get(t, cl, base+"/console/?trend=custom&from=2026-12-01&to=2026-12-03")
	if status != http.StatusOK {
		t.Fatalf("custom range: %d", status)
	}
	if got := figure(t, body, "headline-messages"); got != "5 较上一时段 +67%" {
		t.Errorf("headline over 12-01..12-03: %q, want 5 against 3", got)
	}
	rows := chartRows(t, body, "chart-stops")
	if n := sumColumn(t, rows, "完成"); n != 5 || len(rows) != 2 || rows[1][0] != "12-02 06:00–12:00" {
		t.Errorf("stop chart over 12-01..12-03: %d runs in %q, want 5 in the quarter 06:00–12:00 of 12-02", n, rows)
	}
	if !strings.Contains(body, `id="trend-from" value="2026-12-01"`) || !strings.Contains(body, `&from=2026-12-01&to=2026-12-03"`) {
		t.Error("the custom form or the refresh does not keep the chosen days")
	}
	_, body = get(t, cl, base+"/console/?trend=custom&from=2026-12-03&to=2026-12-01")
	if !strings.Contains(body, `id="trend-invalid"`) || !strings.Contains(body, `id="trend-24h" class="on"`) {
		t.Error("a range the wrong way round is not refused with the default period shown")
	}
}
