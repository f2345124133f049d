package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// benchRuns is how many runs the chart benchmark stores: the issue's
// "stays fast at 1,000,000 runs".
const benchRuns = 1_000_000

// benchDays is the period the runs are spread over, evenly: the 7-day
// charts read a quarter of them, the 24-hour ones a thirtieth.
const benchDays = 30

// fillRuns stores n runs over the days before now, each answering its own
// message in one of 10,000 sessions of 3 channels, with one skill call
// (every 20th failed, every 200th refused by an open breaker), one
// history message, and a given-up reply part for every 100th; a skill's
// breaker opens every 2,000 runs.
func fillRuns(b *testing.B, ctx context.Context, q store.Querier, n int, now time.Time) {
	b.Helper()
	span := time.Duration(benchDays) * 24 * time.Hour
	if _, err := q.Exec(ctx, `INSERT INTO sessions (channel, account, chat_id, user_id)
         SELECT (ARRAY['wecom','dingtalk','feishu'])[g % 3 + 1], 'acc-' || (g % 4), 'chat-' || g, 'user-' || g
         FROM generate_series(1, 10000) g`); err != nil {
		b.Fatalf("fill sessions: %v", err)
	}
	for _, sql := range []string{
		`INSERT INTO inbound_messages (id, channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, text, status, received_at)
         SELECT g, (ARRAY['wecom','dingtalk','feishu'])[g % 3 + 1], 'acc-' || (g % 4), 'm-' || g, 'text', 'chat-' || g % 10000,
                'single', 'user-' || g % 10000, '我还有几天年假？', 'done', $2::timestamptz - $3::interval * (g::float8 / $1)
         FROM generate_series(1, $1::int) g`,
		`INSERT INTO runs (id, session_id, inbound_id, model, stop_reason, prompt_tokens, completion_tokens, started_at, finished_at)
         SELECT 'run-' || g, g % 10000 + 1, g, (ARRAY['qwen-plus','deepseek-chat'])[g % 2 + 1],
                CASE WHEN g % 50 = 0 THEN 'timeout' WHEN g % 20 = 0 THEN 'fatal_tool_error' ELSE 'finished' END,
                800 + g % 400, 100 + g % 50, t, t + (500 + g % 4000) * interval '1 millisecond'
         FROM (SELECT g, $2::timestamptz - $3::interval * (g::float8 / $1) AS t FROM generate_series(1, $1::int) g) x`,
		`INSERT INTO run_steps (run_id, seq, step, kind, tool, error, latency_ms)
         SELECT 'run-' || g, 1, 1, 'tool', (ARRAY['hr_leave_balance','it_ticket','expense_status'])[g % 3 + 1],
                CASE WHEN g % 200 = 0 THEN 'skill it_ticket is unavailable: circuit breaker is open after repeated failures'
                     WHEN g % 20 = 0 THEN 'skill it_ticket is unavailable (HTTP 503)' ELSE '' END, 50 + g % 900
         FROM generate_series(1, $1::int) g
         WHERE $2::timestamptz IS NOT NULL AND $3::interval IS NOT NULL -- one argument list for every statement`,
		`INSERT INTO messages (session_id, inbound_id, role, content, created_at)
         SELECT g % 10000 + 1, g, 'user', '我还有几天年假？', $2::timestamptz - $3::interval * (g::float8 / $1)
         FROM generate_series(1, $1::int) g`,
		// A breaker opening, half-opening and closing every 2,000 runs:
		// some 17 openings a day.
		`INSERT INTO skill_breaker_events (skill, from_state, to_state, at)
         SELECT (ARRAY['hr_leave_balance','it_ticket','expense_status'])[g % 3 + 1], e.f, e.t,
                $2::timestamptz - $3::interval * (g::float8 / $1) + e.o * interval '1 minute'
         FROM generate_series(2000, $1::int, 2000) g,
              (VALUES ('closed', 'open', 0), ('open', 'half-open', 5), ('half-open', 'closed', 6)) AS e(f, t, o)`,
		`INSERT INTO outbox (reply_key, part, channel, account, reply_to, text, failed_at)
         SELECT 'answer:' || g, 0, (ARRAY['wecom','dingtalk','feishu'])[g % 3 + 1], 'acc-' || (g % 4), '{}', '…',
                $2::timestamptz - $3::interval * (g::float8 / $1)
         FROM generate_series(100, $1::int, 100) g`,
		// Every run's asker in one of 50 departments, every 7th in two.
		`UPDATE runs SET departments = CASE WHEN inbound_id % 7 = 0 THEN ARRAY['d' || inbound_id % 50, 'd' || (inbound_id + 1) % 50]
                                           ELSE ARRAY['d' || inbound_id % 50] END
         WHERE $1::int IS NOT NULL AND $2::timestamptz IS NOT NULL AND $3::interval IS NOT NULL`,
		// Every 10th answer rated, one in five of them 👎.
		`INSERT INTO run_ratings (run_id, rating, channel, account, rated_at)
         SELECT 'run-' || g, CASE WHEN g % 50 = 0 THEN -1 ELSE 1 END, (ARRAY['wecom','dingtalk','feishu'])[g % 3 + 1], 'acc-' || (g % 4),
                $2::timestamptz - $3::interval * (g::float8 / $1) + interval '1 minute'
         FROM generate_series(10, $1::int, 10) g`,
		// A refused callback every 5 minutes of the month.
		`INSERT INTO callback_refusal_minutes (channel, account, "check", minute, count)
         SELECT 'wecom', 'acc-1', 'signature', date_trunc('minute', $2::timestamptz - g * interval '5 minutes'), 1 + g % 3
         FROM generate_series(1, (extract(epoch FROM $3::interval) / 300)::int) g WHERE $1::int IS NOT NULL`,
	} {
		if _, err := q.Exec(ctx, sql, n, now, span); err != nil {
			b.Fatalf("fill: %v\n%s", err, sql)
		}
	}
}

// BenchmarkConsoleCharts1M reports the time of each chart query of the
// console and of its headline over the last hour, 24 hours, 7 days and 30
// days, and of exporting a day of runs, at
// 1,000,000 runs. The fill takes a minute or two; run it with
// -benchtime 5x.
func BenchmarkConsoleCharts1M(b *testing.B) {
	ctx := context.Background()
	pool := storetest.NewPool(b)
	now := time.Now().Truncate(time.Hour)
	fillRuns(b, ctx, pool, benchRuns, now)
	// VACUUM sets the visibility map, as autovacuum does on a live table,
	// so that the index-only scans need no heap look-ups; ANALYZE gives the
	// planner the table sizes.
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE runs, inbound_messages, outbox, run_steps, messages, sessions, skill_breaker_events,
	                             run_ratings, callback_refusal_minutes`); err != nil {
		b.Fatal(err)
	}
	c := store.NewConsole(pool) // as the console runs them
	charts := []struct {
		name string
		run  func(store.ChartRange) error
	}{
		{"traffic", func(r store.ChartRange) error { _, err := c.TrafficChart(ctx, r); return err }},
		{"stops", func(r store.ChartRange) error { _, err := c.StopChart(ctx, r); return err }},
		{"latency", func(r store.ChartRange) error { _, err := c.LatencyChart(ctx, r); return err }},
		{"givenup", func(r store.ChartRange) error { _, err := c.GivenUpChart(ctx, r); return err }},
		{"tokens", func(r store.ChartRange) error {
			_, err := c.TokenChart(ctx, store.ChartRange{Since: r.Since, Until: r.Until, Step: 24 * time.Hour})
			return err
		}},
		{"skills", func(r store.ChartRange) error { _, err := c.SkillChart(ctx, r); return err }},
		{"breaker", func(r store.ChartRange) error { _, err := c.BreakerOpenings(ctx, r); return err }},
		// The overview's costs by account and by department.
		{"cost_accounts", func(r store.ChartRange) error { _, err := c.TokensByAccount(ctx, r); return err }},
		{"cost_departments", func(r store.ChartRange) error { _, err := c.TokensByDepartment(ctx, r); return err }},
		{"ratings", func(r store.ChartRange) error {
			_, err := c.RatingChart(ctx, store.ChartRange{Since: r.Since, Until: r.Until, Step: 24 * time.Hour})
			return err
		}},
		{"refusals", func(r store.ChartRange) error { _, err := c.RefusalChart(ctx, r); return err }},
		// The overview's headline: the period and the one before it.
		{"headline", func(r store.ChartRange) error {
			if _, err := c.HeadlineFigures(ctx, r); err != nil {
				return err
			}
			_, err := c.HeadlineFigures(ctx, store.ChartRange{Since: r.Since.Add(-r.Until.Sub(r.Since)), Until: r.Since})
			return err
		}},
	}
	// The console's periods and their buckets (web/console/trends.go).
	for _, period := range []struct {
		name    string
		d, step time.Duration
	}{{"1h", time.Hour, time.Minute}, {"24h", 24 * time.Hour, time.Hour}, {"7d", 7 * 24 * time.Hour, 6 * time.Hour}, {"30d", 30 * 24 * time.Hour, 24 * time.Hour}} {
		r := store.ChartRange{Since: now.Add(-period.d), Until: now.Add(period.step), Step: period.step}
		for _, c := range charts {
			b.Run(c.name+"_"+period.name, func(b *testing.B) {
				for b.Loop() {
					if err := c.run(r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("export_runs_24h", func(b *testing.B) {
		for b.Loop() {
			n := 0
			err := c.ExportRuns(ctx, now.Add(-24*time.Hour), now, 100_000, func(store.ExportRun) error { n++; return nil })
			if err != nil || n == 0 {
				b.Fatalf("export: %d rows, %v", n, err)
			}
		}
	})
}
