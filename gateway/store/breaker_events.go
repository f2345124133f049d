package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// The circuit breakers' state changes (migration 00020), so that the
// console marks every opening, not only those a refused call ran into.

// BreakerOpen is the state a breaker opens to, as gobreaker (and
// skills.Registry.BreakerState) name it.
const BreakerOpen = "open"

// BreakerEventsInFlight bounds the state changes being written at once;
// beyond it a change is dropped (and logged).
const BreakerEventsInFlight = 8

// breakerEventTimeout bounds one write: an event that cannot be stored
// in that time is logged and given up, rather than holding a connection
// for a database that is struggling anyway.
const breakerEventTimeout = 5 * time.Second

// BreakerRecorder writes the changes skills.Options.OnBreakerChange
// reports. Record is that hook: it is called inside gobreaker's lock,
// during a skill call, so it never waits for the database.
//
// Each change is written by a goroutine of its own, rather than by one
// goroutine draining a queue, because changes are rare (a few per skill
// per open_for at most: closed→open, open→half-open, then open or closed
// again) and because the gateway builds a new skill registry, and with it
// a recorder, at every reload: a recorder that keeps no goroutine needs
// no Stop, so wiring it is one line. BreakerEventsInFlight bounds the
// goroutines (and the connections they take) if the database is slow or
// a flapping backend trips many breakers at once.
type BreakerRecorder struct {
	q       Querier // the pool: its writes run concurrently
	log     *slog.Logger
	slots   chan struct{}
	writes  sync.WaitGroup
	dropped atomic.Int64
}

// NewBreakerRecorder writes into q, which must be safe for concurrent use
// (the pool), and logs the changes it could not store to log (nil:
// slog.Default()).
func NewBreakerRecorder(q Querier, log *slog.Logger) *BreakerRecorder {
	if log == nil {
		log = slog.Default()
	}
	return &BreakerRecorder{q: q, log: log, slots: make(chan struct{}, BreakerEventsInFlight)}
}

// Record stores, in the background, that skill's breaker went from one
// state to another at at. It returns at once; with BreakerEventsInFlight
// writes under way the change is dropped, counted and logged.
func (b *BreakerRecorder) Record(skill, from, to string, at time.Time) {
	select {
	case b.slots <- struct{}{}:
	default:
		n := b.dropped.Add(1)
		b.log.Warn("store: circuit breaker change not recorded: too many writes under way",
			"skill", skill, "from", from, "to", to, "at", at, "dropped", n)
		return
	}
	b.writes.Add(1)
	go func() {
		defer b.writes.Done()
		defer func() { <-b.slots }()
		ctx, cancel := context.WithTimeout(context.Background(), breakerEventTimeout)
		defer cancel()
		if err := InsertBreakerEvent(ctx, b.q, skill, from, to, at); err != nil {
			b.log.Warn("store: circuit breaker change not recorded", "skill", skill, "from", from, "to", to, "at", at, "err", err)
		}
	}()
}

// Wait returns when the writes under way have ended (for tests and an
// orderly shutdown; Record needs no call of it).
func (b *BreakerRecorder) Wait() { b.writes.Wait() }

// Dropped is how many changes Record dropped because too many writes
// were under way.
func (b *BreakerRecorder) Dropped() int64 { return b.dropped.Load() }

// InsertBreakerEvent stores one change of skill's breaker.
func InsertBreakerEvent(ctx context.Context, q Querier, skill, from, to string, at time.Time) error {
	if _, err := q.Exec(ctx, `INSERT INTO skill_breaker_events (skill, from_state, to_state, at) VALUES ($1, $2, $3, $4)`,
		skill, from, to, at); err != nil {
		return fmt.Errorf("store: insert breaker event of %s: %w", skill, err)
	}
	return nil
}

// BreakerOpeningPoint is how often one skill's breaker opened in one
// bucket.
type BreakerOpeningPoint struct {
	At       time.Time
	Skill    string
	Openings int
}

// BreakerOpenings counts the openings of each skill's breaker per bucket:
// the changes to open, from closed (it tripped) or from half-open (its
// probe failed).
func BreakerOpenings(ctx context.Context, q Querier, r ChartRange) ([]BreakerOpeningPoint, error) {
	return collectChart[BreakerOpeningPoint](ctx, q, "breaker openings", `
SELECT date_bin($3, at, $1), skill, count(*)::int
FROM skill_breaker_events WHERE at >= $1 AND at < $2 AND to_state = $4
GROUP BY 1, 2 ORDER BY 1, 2`, r, "", BreakerOpen)
}
