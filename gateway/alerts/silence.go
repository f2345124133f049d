package alerts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// MaxSilence bounds one silence: an alert silenced for longer is an alert
// to delete from the config.
const MaxSilence = 7 * 24 * time.Hour

// ErrUnknownRule: no rule of alerts.rules has that name.
var ErrUnknownRule = errors.New("alerts: no such rule")

// Silence keeps rule's incidents from being posted until until (a zero
// until lifts the silence now), recording who asked and why in
// alert_silences, in q: run it in a transaction, so what is in force was
// recorded. Incidents still open and close
// while silenced, so the state is right when the silence ends. Errors
// wrap ErrUnknownRule, or say the silence is longer than MaxSilence.
func Silence(ctx context.Context, q store.Querier, rules []config.AlertRule, rule string, until time.Time, by, reason string, now time.Time) error {
	if !slices.ContainsFunc(rules, func(r config.AlertRule) bool { return r.Name == rule }) {
		return fmt.Errorf("%w: %q", ErrUnknownRule, rule)
	}
	if until.After(now.Add(MaxSilence)) {
		return fmt.Errorf("alerts: a silence of at most %s, got until %s", MaxSilence, until.Format(time.RFC3339))
	}
	if until.IsZero() {
		until = now
	}
	// Two statements: the caller's transaction (or a pool, where a failed
	// record leaves a silence in force without its audit: use one).
	if _, err := q.Exec(ctx, `INSERT INTO alert_state (rule, silenced_until, silenced_by) VALUES ($1, $2, $3)
ON CONFLICT (rule) DO UPDATE SET silenced_until = excluded.silenced_until, silenced_by = excluded.silenced_by`, rule, until, by); err != nil {
		return fmt.Errorf("alerts: silence %q: %w", rule, err)
	}
	if _, err := q.Exec(ctx, `INSERT INTO alert_silences (rule, until, by, at, reason) VALUES ($1, $2, $3, $4, $5)`,
		rule, until, by, now, reason); err != nil {
		return fmt.Errorf("alerts: record the silence of %q: %w", rule, err)
	}
	return nil
}

// RuleState is a rule as an operator reads it: firing since when,
// silenced until when, and its latest incidents.
type RuleState struct {
	Rule          config.AlertRule
	FiringSince   *time.Time
	SilencedUntil *time.Time
	SilencedBy    string
	LatestFirings []Firing
}

// Firing is one incident of a rule.
type Firing struct {
	Start      time.Time
	Value      float64
	ResolvedAt *time.Time
	Silenced   bool
}

// States are rules' states and at most latest incidents of each, newest
// first.
func States(ctx context.Context, q store.Querier, rules []config.AlertRule, latest int) ([]RuleState, error) {
	out := make([]RuleState, len(rules))
	for i, r := range rules {
		out[i].Rule = r
		err := q.QueryRow(ctx, `SELECT firing_since, silenced_until, silenced_by FROM alert_state WHERE rule = $1`, r.Name).
			Scan(&out[i].FiringSince, &out[i].SilencedUntil, &out[i].SilencedBy)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("alerts: state of %q: %w", r.Name, err)
		}
		rows, err := q.Query(ctx, `SELECT window_start, value, resolved_at, silenced FROM alert_firings
WHERE rule = $1 ORDER BY window_start DESC LIMIT $2`, r.Name, latest)
		if err != nil {
			return nil, fmt.Errorf("alerts: firings of %q: %w", r.Name, err)
		}
		out[i].LatestFirings, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (f Firing, err error) {
			return f, row.Scan(&f.Start, &f.Value, &f.ResolvedAt, &f.Silenced)
		})
		if err != nil {
			return nil, fmt.Errorf("alerts: firings of %q: %w", r.Name, err)
		}
	}
	return out, nil
}
