package alerts

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
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
		got, ok, err := measure(ctx, pool, config.AlertRule{Name: when, When: when, Window: 10 * time.Minute}, now)
		if err != nil || !ok || got < want-0.001 || got > want+0.001 {
			t.Errorf("%s: %v %v %v, want %v", when, got, ok, err, want)
		}
	}
	// No runs in the window: no percentile, so no alert.
	if _, ok, err := measure(ctx, pool, config.AlertRule{When: config.AlertAnswerP95, Window: time.Minute}, now); ok || err != nil {
		t.Errorf("p95 of no runs: ok %v, err %v; want nothing to measure", ok, err)
	}
}
