package alerts

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestMain waits, after the tests, until their databases are dropped.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// TestMeasures: each measure over a 10-minute window of stored runs and
// replies, counting only what falls inside it.
func TestMeasures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	in, out := now.Add(-5*time.Minute), now.Add(-20*time.Minute)
	if _, err := pool.Exec(ctx, `INSERT INTO sessions (channel, account, chat_id, user_id) VALUES ('wecom', 'app', 'u', 'u')`); err != nil {
		t.Fatal(err)
	}
	// Every statement takes both times (one argument list for all).
	for _, sql := range []string{
		`INSERT INTO inbound_messages (id, channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, status, received_at)
         SELECT g, 'wecom', 'app', 'm-' || g, 'text', 'u', 'single', 'u', 'done', $1 FROM generate_series(1, 30) g
         WHERE $2::timestamptz IS NOT NULL`,
		// 20 runs inside the window, answered in 1..20 s (the 20th failed,
		// the 19th timed out with an error); 10 outside, failed, in 100 s.
		`INSERT INTO runs (id, session_id, inbound_id, model, stop_reason, error, started_at, finished_at)
         SELECT 'in-' || g, 1, g, 'm', CASE WHEN g = 20 THEN 'fatal_tool_error' ELSE 'finished' END,
                CASE WHEN g = 19 THEN 'model: 503' ELSE '' END, $1::timestamptz, $1::timestamptz + g * interval '1 second'
         FROM generate_series(1, 20) g WHERE $2::timestamptz IS NOT NULL`,
		`INSERT INTO runs (id, session_id, inbound_id, model, stop_reason, started_at, finished_at)
         SELECT 'out-' || g, 1, g, 'm', 'error', $2::timestamptz, $2::timestamptz + interval '100 seconds' FROM generate_series(21, 30) g
         WHERE $1::timestamptz IS NOT NULL`,
		// 2 replies given up inside (one of them in 3 parts), 4 outside.
		`INSERT INTO outbox (reply_key, part, channel, account, reply_to, text, failed_at)
         SELECT 'a:' || (g % 2), g, 'wecom', 'app', '{}', '…', $1 FROM generate_series(0, 3) g WHERE $2::timestamptz IS NOT NULL`,
		`INSERT INTO outbox (reply_key, part, channel, account, reply_to, text, failed_at)
         SELECT 'b:' || g, 0, 'wecom', 'app', '{}', '…', $2 FROM generate_series(1, 4) g WHERE $1::timestamptz IS NOT NULL`,
	} {
		if _, err := pool.Exec(ctx, sql, in, out); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	for when, want := range map[string]float64{
		config.AlertDeliveriesFailed: 2,
		config.AlertRunsFailed:       2,
		config.AlertAnswerP95:        19.05, // percentile_cont of 1..20 s
	} {
		got, ok, err := measure(ctx, pool, config.AlertRule{Name: when, When: when, Window: 10 * time.Minute}, now, config.CostsConfig{})
		if err != nil || !ok || got < want-0.001 || got > want+0.001 {
			t.Errorf("%s: %v %v %v, want %v", when, got, ok, err, want)
		}
	}
	// No runs in the window: no percentile, so no alert.
	if _, ok, err := measure(ctx, pool, config.AlertRule{When: config.AlertAnswerP95, Window: time.Minute}, now, config.CostsConfig{}); ok || err != nil {
		t.Errorf("p95 of no runs: ok %v, err %v; want nothing to measure", ok, err)
	}
}

// TestMoreMeasures: a skill's error rate (all skills or one), breakers
// opening, the delivery backlog now, the model bill by the configured
// prices, and no traffic only within working hours.
func TestMoreMeasures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	// Friday 2026-12-04 11:00 in Shanghai.
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	in, out := now.Add(-5*time.Minute), now.Add(-20*time.Minute)
	for _, sql := range []string{
		`INSERT INTO sessions (channel, account, chat_id, user_id) VALUES ('wecom', 'app', 'u', 'u') RETURNING $1::timestamptz, $2::timestamptz`,
		`INSERT INTO inbound_messages (id, channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, status, received_at)
         SELECT g, 'wecom', 'app', 'm-' || g, 'text', 'u', 'single', 'u', 'done', CASE WHEN g <= 2 THEN $2::timestamptz ELSE $1::timestamptz END
         FROM generate_series(1, 4) g`,
		`INSERT INTO runs (id, session_id, inbound_id, model, stop_reason, prompt_tokens, completion_tokens, started_at, finished_at)
         SELECT 'r' || g, 1, g, CASE WHEN g = 4 THEN 'unpriced' ELSE 'qwen-plus' END, 'finished', 1000000, 500000,
                CASE WHEN g <= 2 THEN $2::timestamptz ELSE $1::timestamptz END, $1 FROM generate_series(1, 4) g`,
		// In the window: hr 4 calls, 1 failed; it 1 call, failed. Outside: 5 failed.
		`INSERT INTO run_steps (run_id, seq, step, kind, tool, error)
         SELECT 'r3', g, g, 'tool', CASE WHEN g <= 4 THEN 'hr' ELSE 'it' END, CASE WHEN g IN (1, 5) THEN 'HTTP 500' ELSE '' END
         FROM generate_series(1, 5) g WHERE $1::timestamptz IS NOT NULL AND $2::timestamptz IS NOT NULL`,
		`INSERT INTO run_steps (run_id, seq, step, kind, tool, error)
         SELECT 'r1', g, g, 'tool', 'hr', 'HTTP 500' FROM generate_series(1, 5) g WHERE $1::timestamptz IS NOT NULL AND $2::timestamptz IS NOT NULL`,
		`INSERT INTO skill_breaker_events (skill, from_state, to_state, at) VALUES
         ('hr', 'closed', 'open', $1), ('hr', 'open', 'half-open', $1), ('it', 'closed', 'open', $2)`,
		// Two parts waiting 5 minutes, one just queued, one sent.
		`INSERT INTO outbox (reply_key, part, channel, account, reply_to, text, created_at, delivered_at) VALUES
         ('w:1', 0, 'wecom', 'app', '{}', '…', $1, NULL), ('w:2', 0, 'wecom', 'app', '{}', '…', $1, NULL),
         ('w:3', 0, 'wecom', 'app', '{}', '…', $1::timestamptz + interval '4 minutes 30 seconds', NULL),
         ('w:4', 0, 'wecom', 'app', '{}', '…', $2, $1)`,
	} {
		if _, err := pool.Exec(ctx, sql, in, out); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	costs := config.CostsConfig{Models: map[string]config.ModelPrice{"qwen-plus": {Prompt: 0.8, Completion: 2}}}
	for _, c := range []struct {
		r    config.AlertRule
		want float64
		ok   bool
	}{
		{config.AlertRule{When: config.AlertSkillErrorRate}, 40, true},
		{config.AlertRule{When: config.AlertSkillErrorRate, Skill: "hr"}, 25, true},
		{config.AlertRule{When: config.AlertSkillErrorRate, Skill: "nobody"}, 0, false},
		{config.AlertRule{When: config.AlertBreakerOpenings}, 1, true},
		{config.AlertRule{When: config.AlertDeliveryBacklog}, 2, true},
		// One priced run in the window (r3; r4 is unpriced, r1-r2 outside): 0.8 + 1.
		{config.AlertRule{When: config.AlertCostPerDay}, 1.8, true},
		{config.AlertRule{When: config.AlertNoTraffic, Hours: "09:00-18:00", TZ: "Asia/Shanghai"}, 0, true},
	} {
		c.r.Name, c.r.Window = c.r.When, 10*time.Minute
		got, ok, err := measure(ctx, pool, c.r, now, costs)
		if err != nil || ok != c.ok || got < c.want-0.001 || got > c.want+0.001 {
			t.Errorf("%s %s: %v %v %v, want %v %v", c.r.When, c.r.Skill, got, ok, err, c.want, c.ok)
		}
	}
	quiet := config.AlertRule{Name: "quiet", When: config.AlertNoTraffic, Window: 10 * time.Minute, Hours: "09:00-18:00", TZ: "Asia/Shanghai"}
	if got, ok, err := measure(ctx, pool, quiet, now.Add(time.Hour), costs); err != nil || !ok || got != 1 {
		t.Errorf("no message for an hour at 12:00: %v %v %v, want 1 (fire)", got, ok, err)
	}
	for name, at := range map[string]time.Time{"Evening": now.Add(8 * time.Hour), "Saturday": now.Add(24 * time.Hour)} {
		if _, ok, err := measure(ctx, pool, quiet, at, costs); ok || err != nil {
			t.Errorf("%s: ok %v err %v; want nothing to measure outside working hours", name, ok, err)
		}
	}
}

// TestRefusedCallbacksMeasure: refused callbacks recorded through the
// store count in the window of a refused_callbacks rule by their minute,
// those before it do not, and the console's chart counts them per account.
func TestRefusedCallbacksMeasure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	for i := range 7 {
		if err := store.RecordRefusal(ctx, pool, "wecom", "app", "signature", now.Add(-time.Duration(i+1)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.RecordRefusal(ctx, pool, "feishu", "bot", "timestamp", now.Add(-3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := store.RecordRefusal(ctx, pool, "wecom", "app", "signature", now.Add(-30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	rule := config.AlertRule{Name: "refused", When: config.AlertRefusedCallbacks, Window: 10 * time.Minute}
	if got, ok, err := measure(ctx, pool, rule, now, config.CostsConfig{}); err != nil || !ok || got != 8 {
		t.Errorf("refused callbacks over 10 minutes: %v %v %v, want 8", got, ok, err)
	}
	var total int
	if err := pool.QueryRow(ctx, `SELECT sum(count) FROM callback_refusals`).Scan(&total); err != nil || total != 9 {
		t.Errorf("running totals: %d %v, want 9", total, err)
	}
	points, err := store.RefusalChart(ctx, pool, store.ChartRange{Since: now.Add(-time.Hour), Until: now.Add(time.Minute), Step: time.Hour,
		Channel: "wecom", Account: "app"})
	sum := 0
	for _, p := range points {
		if p.Channel != "wecom" || p.Account != "app" {
			t.Errorf("wecom/app's chart holds %+v", p)
		}
		sum += p.Refused
	}
	if err != nil || sum != 8 {
		t.Errorf("wecom/app's refusals over the hour: %+v %v, want 8", points, err)
	}
	// The housekeeping forgets minutes past the history, not the totals.
	if err := store.ForgetRefusalMinutes(ctx, pool, now.Add(store.RefusalHistory)); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := measure(ctx, pool, rule, now, config.CostsConfig{}); got != 0 {
		t.Errorf("after the history was forgotten the measure is %v", got)
	}
}

// TestBudgetMeasure: the share of an account's monthly budget spent this
// calendar month in the rule's time zone: its runs of this month count,
// another account's and last month's do not.
func TestBudgetMeasure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	// 2026-12-01 01:00 in Shanghai is still November 30 in UTC.
	now := time.Date(2026, 12, 3, 4, 0, 0, 0, time.UTC)
	thisMonth := time.Date(2026, 11, 30, 17, 0, 0, 0, time.UTC)
	lastMonth := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	for _, sql := range []string{
		`INSERT INTO sessions (id, channel, account, chat_id, user_id) VALUES (1, 'wecom', 'app', 'u', 'u'), (2, 'feishu', 'bot', 'u', 'u')
         RETURNING $1::timestamptz, $2::timestamptz`,
		`INSERT INTO inbound_messages (id, channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, status, received_at)
         SELECT g, 'wecom', 'app', 'm-' || g, 'text', 'u', 'single', 'u', 'done', $1 FROM generate_series(1, 4) g WHERE $2::timestamptz IS NOT NULL`,
		// wecom/app: 2 runs this month of 1,000,000 prompt tokens each, one last
		// month; feishu/bot: one this month.
		`INSERT INTO runs (id, session_id, inbound_id, model, stop_reason, prompt_tokens, started_at, finished_at) VALUES
         ('a', 1, 1, 'qwen-plus', 'finished', 1000000, $1, $1), ('b', 1, 2, 'qwen-plus', 'finished', 1000000, $1, $1),
         ('c', 1, 3, 'qwen-plus', 'finished', 1000000, $2, $2), ('d', 2, 4, 'qwen-plus', 'finished', 1000000, $1, $1)`,
	} {
		if _, err := pool.Exec(ctx, sql, thisMonth, lastMonth); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	costs := config.CostsConfig{Models: map[string]config.ModelPrice{"qwen-plus": {Prompt: 4}}, Budgets: map[string]float64{"wecom/app": 10}}
	rule := config.AlertRule{Name: "budget", When: config.AlertBudget, Account: "wecom/app", TZ: "Asia/Shanghai", Window: 10 * time.Minute}
	if got, ok, err := measure(ctx, pool, rule, now, costs); err != nil || !ok || got != 80 {
		t.Errorf("wecom/app's budget used: %v %v %v, want 80 (8 of 10)", got, ok, err)
	}
	// In UTC's months the runs of December 1, 01:00 in Shanghai were
	// November's.
	rule.TZ = "UTC"
	if got, _, _ := measure(ctx, pool, rule, now, costs); got != 0 {
		t.Errorf("in UTC's December: %v, want 0", got)
	}
}
