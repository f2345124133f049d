package alerts

import (
	"context"
	"fmt"
	"strings"
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
	// Calls refused by an open breaker count as failed, as on the
	// console's per-skill error rate; $3 is one skill or '' for all.
	config.AlertSkillErrorRate: `
SELECT (100.0 * count(*) FILTER (WHERE st.error <> '') / nullif(count(*), 0))::float8
FROM run_steps st JOIN runs r ON r.id = st.run_id
WHERE r.started_at >= $1 AND r.started_at < $2 AND st.kind = 'tool' AND ($3 = '' OR st.tool = $3)`,
	config.AlertBreakerOpenings: `
SELECT count(*)::float8 FROM skill_breaker_events WHERE at >= $1 AND at < $2 AND to_state = 'open'`,
	// Now, whatever the window: parts neither sent nor given up that have
	// waited over a minute (outbox_order_idx holds exactly the waiting ones).
	config.AlertDeliveryBacklog: `
SELECT count(*)::float8 FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL
  AND created_at < $2::timestamptz - interval '1 minute' AND $1::timestamptz IS NOT NULL`,
	// Callbacks refused over the window, by the minute they were refused
	// in (callback_refusal_minutes): a minute counts once it has begun.
	config.AlertRefusedCallbacks: `
SELECT coalesce(sum(count), 0)::float8 FROM callback_refusal_minutes
WHERE minute >= date_trunc('minute', $1::timestamptz) AND minute < $2`,
	// The traffic over the window; no_traffic turns it into 1 (none) or 0.
	config.AlertNoTraffic: `
SELECT count(*)::float8 FROM inbound_messages WHERE received_at >= $1 AND received_at < $2`,
}

// tokensSQL are the tokens by model over [$1, $2), of one account when $3
// and $4 name one (its conversations' runs), for the cost measures.
const tokensSQL = `SELECT r.model, sum(r.prompt_tokens)::bigint, sum(r.completion_tokens)::bigint
FROM runs r JOIN sessions s ON s.id = r.session_id
WHERE r.started_at >= $1 AND r.started_at < $2 AND ($3 = '' OR (s.channel = $3 AND s.account = $4))
GROUP BY r.model`

// measure is rule r's measure over the window ending at now; ok is false
// when there is nothing to measure (no_traffic outside working hours).
// costs prices the cost measures.
func measure(ctx context.Context, q store.Querier, r config.AlertRule, now time.Time, costs config.CostsConfig) (v float64, ok bool, err error) {
	switch r.When {
	case config.AlertCostPerDay:
		v, err := cost(ctx, q, now.Add(-r.Window), now, "", costs)
		if err != nil {
			return 0, false, fmt.Errorf("alerts: measure %s of rule %q: %w", r.When, r.Name, err)
		}
		return v, true, nil
	case config.AlertBudget:
		return budgetUsed(ctx, q, r, now, costs)
	case config.AlertNoTraffic:
		if !working(r, now) {
			return 0, false, nil
		}
		n, ok, err := measureSQL(ctx, q, r, now)
		if err != nil || !ok {
			return 0, ok, err
		}
		if n == 0 {
			return 1, true, nil
		}
		return 0, true, nil
	}
	return measureSQL(ctx, q, r, now)
}

// measureSQL is r's measure by its query in measures.
func measureSQL(ctx context.Context, q store.Querier, r config.AlertRule, now time.Time) (v float64, ok bool, err error) {
	sql, known := measures[r.When]
	if !known {
		return 0, false, fmt.Errorf("alerts: rule %q: no measure %q", r.Name, r.When)
	}
	var got *float64
	args := []any{now.Add(-r.Window), now}
	if strings.Contains(sql, "$3") {
		args = append(args, r.Skill)
	}
	if err := q.QueryRow(ctx, sql, args...).Scan(&got); err != nil {
		return 0, false, fmt.Errorf("alerts: measure %s of rule %q: %w", r.When, r.Name, err)
	}
	if got == nil {
		return 0, false, nil
	}
	return *got, true, nil
}

// cost is the model bill over [since, until) by costs' prices, of account
// ("channel/account"; "" every account); a model without a price costs
// nothing here, as on the console.
func cost(ctx context.Context, q store.Querier, since, until time.Time, account string, costs config.CostsConfig) (float64, error) {
	channel, name, _ := strings.Cut(account, "/")
	rows, err := q.Query(ctx, tokensSQL, since, until, channel, name)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var total float64
	for rows.Next() {
		var model string
		var prompt, completion int64
		if err := rows.Scan(&model, &prompt, &completion); err != nil {
			return 0, err
		}
		if c, ok := costs.Cost(model, prompt, completion); ok {
			total += c
		}
	}
	return total, rows.Err()
}

// budgetUsed is the share of r.Account's monthly budget spent since the
// start of now's calendar month in r.TZ, in percent.
func budgetUsed(ctx context.Context, q store.Querier, r config.AlertRule, now time.Time, costs config.CostsConfig) (float64, bool, error) {
	budget, ok := costs.Budget(r.Account)
	if !ok || budget <= 0 {
		return 0, false, nil // validated with the config
	}
	loc, err := time.LoadLocation(r.TZ)
	if err != nil {
		return 0, false, nil
	}
	spent, err := cost(ctx, q, MonthStart(now, loc), now, r.Account, costs)
	if err != nil {
		return 0, false, fmt.Errorf("alerts: measure %s of rule %q: %w", r.When, r.Name, err)
	}
	return 100 * spent / budget, true, nil
}

// MonthStart is the first instant of now's calendar month in loc.
func MonthStart(now time.Time, loc *time.Location) time.Time {
	t := now.In(loc)
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
}

// working reports whether now is within r's working hours (no_traffic).
func working(r config.AlertRule, now time.Time) bool {
	loc, err := time.LoadLocation(r.TZ)
	if err != nil {
		return false // validated with the config
	}
	from, to, err := r.WorkingHours()
	if err != nil {
		return false
	}
	t := now.In(loc)
	if !r.Weekends && (t.Weekday() == time.Saturday || t.Weekday() == time.Sunday) {
		return false
	}
	m := t.Hour()*60 + t.Minute()
	return m >= from && m < to
}
