package modellimit

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// sharedGate keeps the limits in Postgres (model.limits_scope: shared),
// so every replica on the database counts against the same ones: the
// slots and budgets of migration 00017. Every claim and release is one
// short transaction on a pooled connection, one round trip each; nothing
// holds a connection while a call runs or waits, so the limits cost no
// part of database.max_conns beyond those moments.
//
//   - A slot is a row leased to one call until an expiry, which the
//     replica renews for all its calls at once while they run (one
//     statement every renewEvery, however many calls are in flight). A
//     replica that dies stops renewing, and its slots come free when
//     their leases lapse: within slotLease.
//   - The per-minute budgets are GCRA buckets (a theoretical arrival time
//     per budget, one row per model), the same buckets the replica gate
//     keeps in memory: one UPDATE claims a request and its estimated
//     tokens, and a refused claim learns when it would fit, so it sleeps
//     that long instead of polling. The tokens a call used beyond its
//     estimate are charged when it releases its slot, in the same round
//     trip.
//   - A 429's pause is a time in the same row, which every claim checks.
//
// Waiting polls, but only one waiter per replica does (turn): the others
// wait in the process for it to get its slot. The poller backs off from
// pollMin to pollMax while no slot is free and polls at once when a call
// of its own replica ends; a slot freed by another replica is found
// within pollMax. Replicas are not served in order among themselves: each
// poller takes what is free when it looks.
//
// Clocks: the times are the replicas' own (now), as for every other
// lease of Hermes; skew between replicas shifts a lease or a bucket by as
// much.
type sharedGate struct {
	pool     *pgxpool.Pool
	key      string // the model's rows: its name and base URL
	slots    int    // model.max_concurrent
	requests bucket
	tokens   bucket
	now      func() time.Time
	every    time.Duration // between renewals: renewEvery
	log      *slog.Logger

	turn chan struct{} // holds the one waiter of this replica that claims
	wake chan struct{} // a call of this replica released its slot

	mu       sync.Mutex
	held     map[int64]struct{} // the holders of this replica's slots
	renewing bool               // renewLoop runs
}

// Timing of the shared gate.
const (
	// slotLease is how long a slot stays taken without renewal: how long
	// a dead replica's slots stay lost. Renewed three times per term, so
	// a replica that misses one renewal (a slow query) keeps its slots.
	slotLease  = 30 * time.Second
	renewEvery = slotLease / 3
	// The poll of a waiter while every slot is taken: from pollMin,
	// doubling to pollMax, plus up to a quarter at random so that the
	// pollers of several replicas do not poll in step. pollMin is also the
	// least wait for a budget, so a rounding error cannot make it spin.
	pollMin = 10 * time.Millisecond
	pollMax = 200 * time.Millisecond
	// dbTimeout bounds each statement. Claims and releases run to their
	// end even when the call's ctx ends meanwhile, so a slot committed is
	// never lost to a cancelled read of the answer.
	dbTimeout = 5 * time.Second
)

// bucket is a per-minute budget as GCRA parameters, in microseconds.
type bucket struct {
	interval float64 // per unit: a minute over the budget; 0: no cap
	depth    int     // units that may be claimed at once
}

func newBucket(perMinute int) bucket {
	if perMinute <= 0 {
		return bucket{}
	}
	return bucket{interval: float64(time.Minute.Microseconds()) / float64(perMinute), depth: bucketDepth(perMinute)}
}

// step is how far a claim of n moves the bucket's arrival time (n capped
// at the depth, as the replica gate does, or it could never fit), nil
// without a cap.
func (b bucket) step(n int) *float64 {
	if b.interval == 0 {
		return nil
	}
	s := float64(min(n, b.depth)) * b.interval
	return &s
}

// tolerance is how far past now the arrival time may go: the depth.
func (b bucket) tolerance() float64 { return float64(b.depth) * b.interval }

func newSharedGate(cfg config.ModelConfig, pool *pgxpool.Pool, now func() time.Time) *sharedGate {
	return &sharedGate{
		pool:     pool,
		key:      cfg.Provider + ":" + cfg.Name + "@" + cfg.BaseURL,
		slots:    cfg.MaxConcurrent,
		requests: newBucket(cfg.RequestsPerMinute),
		tokens:   newBucket(cfg.TokensPerMinute),
		now:      now,
		every:    renewEvery,
		log:      slog.Default(),
		turn:     make(chan struct{}, 1),
		wake:     make(chan struct{}, 1),
		held:     map[int64]struct{}{},
	}
}

// acquire implements gate.
func (g *sharedGate) acquire(ctx context.Context, estimate int) (func(int, time.Duration), error) {
	select {
	case g.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-g.turn }()
	holder := rand.Int64()
	held, slot := false, int32(0)
	giveUp := func(err error) (func(int, time.Duration), error) {
		if held {
			g.release(holder, slot, 0, 0)
		}
		return nil, err
	}
	backoff := pollMin
	for {
		if err := ctx.Err(); err != nil {
			return giveUp(err)
		}
		c, err := g.claim(ctx, held, holder, estimate)
		if err != nil {
			return giveUp(err)
		}
		if c.slot != nil && !held {
			held, slot = true, *c.slot
			g.hold(holder)
		}
		if c.missingRows(g.slots) {
			if err := g.ensureRows(ctx); err != nil {
				return giveUp(err)
			}
			continue
		}
		if c.admitted {
			return func(used int, pause time.Duration) { g.release(holder, slot, used-estimate, pause) }, nil
		}
		// Waiting for a slot, a call of this replica ending is worth a
		// look at once; waiting for the budgets, it changes nothing.
		wait, wake := backoff, g.wake
		if held {
			wait, wake = max(pollMin, c.budgetWait(g, estimate, g.now())), nil
		} else {
			backoff = min(2*backoff, pollMax)
		}
		wait += rand.N(wait/4 + 1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-wake:
			t.Stop()
			backoff = pollMin
		case <-ctx.Done():
			t.Stop()
			return giveUp(ctx.Err())
		}
	}
}

// claimSQL takes a free slot (unless the call holds one already, $4) and,
// once the call has its slot, claims a request and the call's estimated
// tokens from the budgets if no pause runs and both have room, in one
// statement: either both budgets are claimed or neither. The slot is kept
// when the budgets refuse; the call waits for them holding it, as in the
// replica gate. It also returns the budgets as they were, for the wait,
// and, when no slot was free, how many slot rows exist (fewer than
// max_concurrent: they are yet to be made).
//
// SKIP LOCKED lets claims of many replicas take different slots at once
// rather than queue on one. The budgets' conditions and new values are
// written on the row itself, not read before: an UPDATE re-reads a row
// another claim changed meanwhile, so concurrent claims never both spend
// the same room.
//
// $1 key, $2 now, $3 max_concurrent, $4 held, $5 holder, $6 expiry,
// $7/$8 the request's step and tolerance (µs; NULL: no cap), $9/$10 the
// tokens'.
const claimSQL = `
WITH slot AS (
    UPDATE model_slots SET holder = $5, expires_at = $6
    WHERE NOT $4 AND key = $1 AND slot = (
        SELECT slot FROM model_slots
        WHERE key = $1 AND slot < $3 AND expires_at <= $2
        ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING slot
), budget AS (
    UPDATE model_budgets SET
        requests_tat = CASE WHEN $7::float8 IS NULL THEN requests_tat
            ELSE greatest(requests_tat, $2) + $7 * interval '1 microsecond' END,
        tokens_tat = CASE WHEN $9::float8 IS NULL THEN tokens_tat
            ELSE greatest(tokens_tat, $2) + $9 * interval '1 microsecond' END
    WHERE key = $1 AND ($4 OR EXISTS (SELECT FROM slot)) AND paused_until <= $2
        AND ($7::float8 IS NULL OR greatest(requests_tat, $2) + $7 * interval '1 microsecond'
            <= $2 + $8::float8 * interval '1 microsecond')
        AND ($9::float8 IS NULL OR greatest(tokens_tat, $2) + $9 * interval '1 microsecond'
            <= $2 + $10::float8 * interval '1 microsecond')
    RETURNING 1
)
SELECT (SELECT slot FROM slot), EXISTS (SELECT FROM budget),
    b.paused_until, b.requests_tat, b.tokens_tat,
    CASE WHEN NOT $4 AND NOT EXISTS (SELECT FROM slot)
        THEN (SELECT count(*) FROM model_slots WHERE key = $1 AND slot < $3) END
FROM (VALUES (1)) AS one (x) LEFT JOIN model_budgets b ON b.key = $1`

// claimed is what one claim found.
type claimed struct {
	slot     *int32 // the slot taken now; nil: none (none free, or held already)
	admitted bool   // the budgets were claimed: the call may start
	// The budget row before the claim; nil when it is yet to be made.
	pausedUntil, requestsTAT, tokensTAT *time.Time
	slotRows                            *int64 // when no slot was free: the slot rows there are
}

// missingRows says the model's rows are yet to be made (first use, or
// max_concurrent raised).
func (c claimed) missingRows(slots int) bool {
	return c.pausedUntil == nil || (c.slotRows != nil && *c.slotRows < int64(slots))
}

// budgetWait is how long until a refused claim would fit, as far as the
// row it read says; other claims may take the room meanwhile.
func (c claimed) budgetWait(g *sharedGate, estimate int, now time.Time) time.Duration {
	wait := c.pausedUntil.Sub(now)
	fits := func(tat time.Time, b bucket, n int) time.Duration {
		step := b.step(n)
		if step == nil {
			return 0
		}
		return tat.Sub(now) + time.Duration((*step-b.tolerance())*float64(time.Microsecond))
	}
	return max(wait, fits(*c.requestsTAT, g.requests, 1), fits(*c.tokensTAT, g.tokens, estimate))
}

// claim is one attempt at the slot (unless held) and the budgets, one
// round trip.
func (g *sharedGate) claim(ctx context.Context, held bool, holder int64, estimate int) (c claimed, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
	defer cancel()
	now := g.now()
	var b pgx.Batch
	// A claim need not survive a crash of Postgres itself (a slot or a
	// fraction of a second of the budget forgotten), so its commit does
	// not wait for the disk.
	b.Queue(store.AsyncCommitSQL)
	b.Queue(claimSQL, g.key, now, g.slots, held, holder, now.Add(slotLease),
		g.requests.step(1), g.requests.tolerance(), g.tokens.step(estimate), g.tokens.tolerance()).
		QueryRow(func(row pgx.Row) error {
			return row.Scan(&c.slot, &c.admitted, &c.pausedUntil, &c.requestsTAT, &c.tokensTAT, &c.slotRows)
		})
	if err := g.pool.SendBatch(ctx, &b).Close(); err != nil {
		return claimed{}, fmt.Errorf("modellimit: claim: %w", err)
	}
	return c, nil
}

// ensureRows makes the model's budget row and its slot rows; those there
// are kept.
func (g *sharedGate) ensureRows(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
	defer cancel()
	var b pgx.Batch
	b.Queue(`INSERT INTO model_budgets (key) VALUES ($1) ON CONFLICT DO NOTHING`, g.key)
	b.Queue(`INSERT INTO model_slots (key, slot) SELECT $1, s FROM generate_series(0, $2 - 1) AS s
ON CONFLICT DO NOTHING`, g.key, g.slots)
	if err := g.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("modellimit: make rows: %w", err)
	}
	return nil
}

// release frees holder's slot and charges the tokens used beyond the
// estimate (extra) and a 429's pause, in one round trip, then wakes this
// replica's waiter. A release that fails leaves the slot to its lease.
func (g *sharedGate) release(holder int64, slot int32, extra int, pause time.Duration) {
	g.unhold(holder)
	defer func() {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	now := g.now()
	var b pgx.Batch
	b.Queue(store.AsyncCommitSQL)
	b.Queue(`UPDATE model_slots SET holder = NULL, expires_at = 'epoch' WHERE key = $1 AND slot = $2 AND holder = $3`,
		g.key, slot, holder)
	var charge *float64
	if extra > 0 {
		charge = g.tokens.step(extra)
	}
	var until *time.Time
	if pause > 0 {
		t := now.Add(pause)
		until = &t
	}
	if charge != nil || until != nil {
		b.Queue(`UPDATE model_budgets SET
    tokens_tat = CASE WHEN $3::float8 IS NULL THEN tokens_tat
        ELSE greatest(tokens_tat, $2) + $3 * interval '1 microsecond' END,
    paused_until = greatest(paused_until, $4::timestamptz)
WHERE key = $1`, g.key, now, charge, until)
	}
	if err := g.pool.SendBatch(ctx, &b).Close(); err != nil {
		g.log.Warn("modellimit: release: the slot comes free when its lease lapses", "lease", slotLease, "err", err)
	}
}

// hold records that holder has a slot, for the renewals.
func (g *sharedGate) hold(holder int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held[holder] = struct{}{}
	if !g.renewing {
		g.renewing = true
		go g.renewLoop()
	}
}

func (g *sharedGate) unhold(holder int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.held, holder)
}

// renewLoop renews this replica's slots while it holds any, and ends when
// it holds none (hold starts it again).
func (g *sharedGate) renewLoop() {
	t := time.NewTicker(g.every)
	defer t.Stop()
	for range t.C {
		g.mu.Lock()
		if len(g.held) == 0 {
			g.renewing = false
			g.mu.Unlock()
			return
		}
		holders := slices.Collect(maps.Keys(g.held))
		g.mu.Unlock()
		if err := g.renew(context.Background(), holders); err != nil {
			g.log.Warn("modellimit: renew slots", "slots", len(holders), "err", err)
		}
	}
}

// renew extends the leases of holders' slots from now, one statement for
// all of them.
func (g *sharedGate) renew(ctx context.Context, holders []int64) error {
	ctx, cancel := context.WithTimeout(ctx, dbTimeout)
	defer cancel()
	if _, err := g.pool.Exec(ctx, `UPDATE model_slots SET expires_at = $2 WHERE key = $1 AND holder = ANY($3)`,
		g.key, g.now().Add(slotLease), holders); err != nil {
		return fmt.Errorf("modellimit: renew: %w", err)
	}
	return nil
}
