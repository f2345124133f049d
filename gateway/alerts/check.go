package alerts

import (
	"context"
	"fmt"
	"strconv"
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
// clock) and, for each above its threshold, claims the rule's current
// window and queues its alert in one transaction: a window claimed before,
// here or on another replica, is not posted again. It returns how many
// alerts it queued; it stops at the first rule whose check failed.
func (s *Service) Check(ctx context.Context) (int, error) {
	now := s.gw.Now()
	if _, err := s.gw.Pool.Exec(ctx, `DELETE FROM alert_firings WHERE window_start < $1`, now.Add(-keepFirings)); err != nil {
		return 0, fmt.Errorf("alerts: prune firings: %w", err)
	}
	fired := 0
	for i, r := range s.gw.Config.Alerts.Rules {
		ok, err := s.checkRule(ctx, r, s.to[i], now)
		if err != nil {
			return fired, err
		}
		if ok {
			fired++
			s.gw.Log.Warn("alert fired", "rule", r.Name, "when", r.When)
		}
	}
	return fired, nil
}

// checkRule queues r's alert to to when r's measure is above its
// threshold and its window at now is not claimed yet; true when it did.
func (s *Service) checkRule(ctx context.Context, r config.AlertRule, to gateway.Address, now time.Time) (bool, error) {
	limit, err := r.Threshold()
	if err != nil { // validated with the config
		return false, fmt.Errorf("alerts: rule %q: %w", r.Name, err)
	}
	v, ok, err := measure(ctx, s.gw.Pool, r, now)
	if err != nil || !ok || v <= limit {
		return false, err
	}
	start := now.Truncate(r.Window)
	fired := false
	err = store.InTx(ctx, s.gw.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO alert_firings (rule, window_start, value, fired_at)
VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, r.Name, start, v, now)
		if err != nil {
			return fmt.Errorf("alerts: claim rule %q: %w", r.Name, err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		key := fmt.Sprintf("alert:%s:%d", r.Name, start.Unix())
		if _, err := s.gw.Outbox.Queue(ctx, tx, key, to, s.text(r, v)); err != nil {
			return fmt.Errorf("alerts: queue rule %q: %w", r.Name, err)
		}
		fired = true
		return nil
	})
	return fired, err
}

// text is r's alert for the measured value v.
func (s *Service) text(r config.AlertRule, v float64) string {
	m := s.gw.Config.Alerts.Messages
	names := map[string]string{
		config.AlertDeliveriesFailed: m.DeliveriesFailed,
		config.AlertRunsFailed:       m.RunsFailed,
		config.AlertAnswerP95:        m.AnswerP95,
	}
	value, above := strconv.FormatFloat(v, 'f', 0, 64), r.Above
	if r.When == config.AlertAnswerP95 {
		value = time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
		if d, err := time.ParseDuration(r.Above); err == nil {
			above = d.String()
		}
	}
	window := fmt.Sprintf(m.Minutes, int(r.Window/time.Minute))
	if r.Window%time.Hour == 0 {
		window = fmt.Sprintf(m.Hours, int(r.Window/time.Hour))
	}
	return fmt.Sprintf(m.Fired, r.Name, window, names[r.When], value, above)
}
