package alerts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// keepFirings is how long a firing's claim is kept: past the longest
// window (a day) nothing reads it.
const keepFirings = 7 * 24 * time.Hour

// Check measures every rule over its window ending now (the gateway's
// clock) and moves each rule's incident: a rule above its threshold that
// was not firing opens an incident and posts the alert; a firing rule back
// at or below it closes the incident and posts that it resolved; anything
// else posts nothing. So one incident is one alert however long it lasts
// and however many windows a failure stays in. Each move takes the rule's
// row lock (alert_state) in the transaction that queues its message, so
// two replicas never move one incident twice. A silenced rule's incidents
// are recorded, not posted. It returns how many messages it queued; it
// stops at the first rule whose check failed.
func (s *Service) Check(ctx context.Context) (int, error) {
	now := s.gw.Now()
	if _, err := s.gw.Pool.Exec(ctx, `DELETE FROM alert_firings WHERE window_start < $1 AND resolved_at IS NOT NULL`,
		now.Add(-keepFirings)); err != nil {
		return 0, fmt.Errorf("alerts: prune firings: %w", err)
	}
	queued := 0
	for i, r := range s.gw.Config.Alerts.Rules {
		move, err := s.checkRule(ctx, r, s.to[i], now)
		if err != nil {
			return queued, err
		}
		switch move {
		case moveFired:
			queued++
			s.gw.Log.Warn("alert fired", "rule", r.Name, "when", r.When)
		case moveResolved:
			queued++
			s.gw.Log.Info("alert resolved", "rule", r.Name, "when", r.When)
		case moveSilenced:
			s.gw.Log.Info("alert fired while silenced; not posted", "rule", r.Name, "when", r.When)
		}
	}
	return queued, nil
}

// A check's move of a rule's incident.
type move int

const (
	moveNone     move = iota
	moveFired         // an incident opened and its alert queued
	moveResolved      // an incident closed and its resolution queued
	moveSilenced      // an incident opened or closed while silenced: recorded only
)

// checkRule measures r and moves its incident (see Check), queueing the
// message to to.
func (s *Service) checkRule(ctx context.Context, r config.AlertRule, to gateway.Address, now time.Time) (move, error) {
	limit, err := r.Threshold()
	if err != nil { // validated with the config
		return moveNone, fmt.Errorf("alerts: rule %q: %w", r.Name, err)
	}
	v, ok, err := measure(ctx, s.gw.Pool, r, now, s.gw.Config.Costs)
	if err != nil {
		return moveNone, err
	}
	above := ok && v > limit
	var m move
	err = store.InTx(ctx, s.gw.Pool, func(tx pgx.Tx) error {
		var since, silencedUntil *time.Time
		err := tx.QueryRow(ctx, `INSERT INTO alert_state (rule) VALUES ($1)
ON CONFLICT (rule) DO UPDATE SET rule = excluded.rule RETURNING firing_since, silenced_until`, r.Name).Scan(&since, &silencedUntil)
		if err != nil {
			return fmt.Errorf("alerts: state of rule %q: %w", r.Name, err)
		}
		silenced := silencedUntil != nil && now.Before(*silencedUntil)
		var key, text string
		switch {
		case above && since == nil:
			if _, err := tx.Exec(ctx, `UPDATE alert_state SET firing_since = $2 WHERE rule = $1`, r.Name, now); err != nil {
				return fmt.Errorf("alerts: open rule %q: %w", r.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO alert_firings (rule, window_start, value, fired_at, silenced)
VALUES ($1, $2, $3, $2, $4) ON CONFLICT DO NOTHING`, r.Name, now, v, silenced); err != nil {
				return fmt.Errorf("alerts: record rule %q: %w", r.Name, err)
			}
			key, text, m = fmt.Sprintf("alert:%s:%d", r.Name, now.Unix()), s.text(r, v), moveFired
		case !above && since != nil:
			if _, err := tx.Exec(ctx, `UPDATE alert_state SET firing_since = NULL WHERE rule = $1`, r.Name); err != nil {
				return fmt.Errorf("alerts: close rule %q: %w", r.Name, err)
			}
			if _, err := tx.Exec(ctx, `UPDATE alert_firings SET resolved_at = $3 WHERE rule = $1 AND window_start = $2`,
				r.Name, *since, now); err != nil {
				return fmt.Errorf("alerts: record rule %q: %w", r.Name, err)
			}
			key, text, m = fmt.Sprintf("alert:%s:%d:resolved", r.Name, since.Unix()), s.resolvedText(r, v, ok, now.Sub(*since)), moveResolved
		default:
			return nil
		}
		if silenced {
			m = moveSilenced
			return nil
		}
		if _, err := s.gw.Outbox.Queue(ctx, tx, key, to, text); err != nil {
			return fmt.Errorf("alerts: queue rule %q: %w", r.Name, err)
		}
		return nil
	})
	if err != nil {
		return moveNone, err
	}
	return m, nil
}

// text is r's alert for the measured value v.
func (s *Service) text(r config.AlertRule, v float64) string {
	value, above, window, measure := s.words(r, v)
	if r.When == config.AlertNoTraffic {
		return fmt.Sprintf(s.gw.Config.Alerts.Messages.NoTrafficFired, r.Name, window)
	}
	return fmt.Sprintf(s.gw.Config.Alerts.Messages.Fired, r.Name, window, measure, value, above)
}

// resolvedText says r's incident is over after lasted, the measure now v
// (ok false: nothing to measure now).
func (s *Service) resolvedText(r config.AlertRule, v float64, ok bool, lasted time.Duration) string {
	m := s.gw.Config.Alerts.Messages
	if r.When == config.AlertNoTraffic {
		return fmt.Sprintf(m.NoTrafficResolved, r.Name, (lasted + r.Window).Round(time.Minute).String())
	}
	value, above, window, measure := s.words(r, v)
	if !ok {
		value = m.Nothing
	}
	return fmt.Sprintf(m.Resolved, r.Name, window, measure, value, above, lasted.Round(time.Minute).String())
}

// words are r's value v, threshold, window and measure as an alert says
// them.
func (s *Service) words(r config.AlertRule, v float64) (value, above, window, measure string) {
	m := s.gw.Config.Alerts.Messages
	names := map[string]string{
		config.AlertDeliveriesFailed: m.DeliveriesFailed,
		config.AlertRunsFailed:       m.RunsFailed,
		config.AlertAnswerP95:        m.AnswerP95,
		config.AlertSkillErrorRate:   m.SkillErrorRate,
		config.AlertBreakerOpenings:  m.BreakerOpenings,
		config.AlertDeliveryBacklog:  m.DeliveryBacklog,
		config.AlertCostPerDay:       m.Cost,
		config.AlertRefusedCallbacks: m.RefusedCallbacks,
		config.AlertBudget:           fmt.Sprintf(m.Budget, r.Account),
	}
	value, above = strconv.FormatFloat(v, 'f', 0, 64), r.Above
	switch r.When {
	case config.AlertSkillErrorRate, config.AlertBudget:
		value, above = strconv.FormatFloat(v, 'f', 1, 64)+"%", strings.TrimSuffix(r.Above, "%")+"%"
	case config.AlertCostPerDay:
		value, above = strconv.FormatFloat(v, 'f', 2, 64)+" "+s.gw.Config.Costs.Currency, r.Above+" "+s.gw.Config.Costs.Currency
	}
	if r.When == config.AlertAnswerP95 {
		value = time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
		if d, err := time.ParseDuration(r.Above); err == nil {
			above = d.String()
		}
	}
	window = fmt.Sprintf(m.Minutes, int(r.Window/time.Minute))
	if r.Window%time.Hour == 0 {
		window = fmt.Sprintf(m.Hours, int(r.Window/time.Hour))
	}
	return value, above, window, names[r.When]
}
