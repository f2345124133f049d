package alerts

import (
	"context"
	"fmt"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// measures are the query of each rule's measure over [$1, $2): one number,
// or NULL when there is nothing to measure (no runs for a percentile).
// Each reads a range of an index made for the console's charts
// (migrations/00018): outbox_failed_idx, runs_started_idx.
var measures = map[string]string{
	// A reply counts once however many of its parts were given up, as on
	// the console's given-up chart.
	config.AlertDeliveriesFailed: `
SELECT count(DISTINCT reply_key)::float8 FROM outbox WHERE failed_at >= $1 AND failed_at < $2`,
	// A failed run as the console's account stats count one.
	config.AlertRunsFailed: `
SELECT count(*)::float8 FROM runs WHERE started_at >= $1 AND started_at < $2
  AND (error <> '' OR stop_reason IN ('error', 'fatal_tool_error'))`,
	config.AlertAnswerP95: `
SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - started_at))::float8
FROM runs WHERE started_at >= $1 AND started_at < $2`,
}

// measure is rule r's measure over the window ending at now; ok is false
// when there is nothing to measure.
func measure(ctx context.Context, q store.Querier, r config.AlertRule, now time.Time) (v float64, ok bool, err error) {
	sql, known := measures[r.When]
	if !known {
		return 0, false, fmt.Errorf("alerts: rule %q: no measure %q", r.Name, r.When)
	}
	var got *float64
	if err := q.QueryRow(ctx, sql, now.Add(-r.Window), now).Scan(&got); err != nil {
		return 0, false, fmt.Errorf("alerts: measure %s of rule %q: %w", r.When, r.Name, err)
	}
	if got == nil {
		return 0, false, nil
	}
	return *got, true, nil
}
