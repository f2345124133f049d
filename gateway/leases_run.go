package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
)

// One run per session at a time, without a connection held while the
// model thinks: a run claims its session's lease (on the session's row) in
// a short transaction, this replica renews the leases of all its runs in
// one statement every third of worker.run_lease, and the transaction that
// commits the answer ends the lease by marking its message answered.
// Whoever ends a lease hands the session on: it enqueues the session's
// oldest message still to answer.
// A replica that dies stops renewing; the sweeper of any replica takes the
// lapsed lease and hands the session on, so its message is answered again
// within about 1.25 × worker.run_lease.

// Outcomes of answering a message that are not failures; processWorker
// translates them for River.
var (
	// errSessionBusy: another run has the session, or an older message of
	// it waits. Nothing to do: that run hands the session on when it ends.
	errSessionBusy = errors.New("gateway: session busy")
	// errLeaseLost: the run's lease lapsed and may be taken over; the run
	// stops without committing and its job looks again later.
	errLeaseLost = errors.New("gateway: session lease lost")
	// errShuttingDown: the run was cancelled by a shutdown; the job runs
	// again at the next start (or on another replica) without using up an
	// attempt.
	errShuttingDown = errors.New("gateway: shutting down")
	// errNoChannel: the message's channel is not configured here; retrying
	// cannot help.
	errNoChannel = errors.New("gateway: channel not configured")
	// errUnknownMessage: the job names a message that is not stored.
	errUnknownMessage = errors.New("gateway: unknown inbound message")
)

// sweepBatch bounds the leases one sweep takes, so its transaction stays short.
const sweepBatch = 100

// runLease is a session lease held by one run of this replica.
type runLease struct {
	sessionID int64
	runID     string
	lost      context.CancelCauseFunc // stops the run with errLeaseLost
	renewedAt time.Time               // guarded by runLeases.mu
}

// runLeases are the leases this replica's runs hold.
type runLeases struct {
	pool      *pgxpool.Pool
	jobs      *Jobs
	replicaID string        // the holder the leases name
	term      time.Duration // worker.run_lease
	sweeps    bool          // a full replica: it sweeps lapsed leases too
	now       func() time.Time
	log       *slog.Logger
	mu        sync.Mutex
	m         map[string]*runLease // by run id
}

func (r *runLeases) add(l *runLease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*runLease{}
	}
	r.m[l.runID] = l
}

func (r *runLeases) remove(runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, runID)
}

// claimInbound begins run runID on inbound message inboundID
// (store.ClaimInbound): with the session's lease taken, it returns a
// context that ends with cause errLeaseLost if the lease is lost while
// the run goes on, and the session's history as hq asks. It returns
// errSessionBusy while another run holds the session, a nil lease when
// the message needs no answer any more, and errUnknownMessage when it is
// not stored.
func (rl *runLeases) claimInbound(ctx context.Context, inboundID int64, runID string, hq store.HistoryQuery) (context.Context, store.InboundClaim, *runLease, error) {
	now := rl.now()
	c, err := store.ClaimInbound(ctx, rl.pool, inboundID, rl.replicaID, runID, now, now.Add(rl.term), hq)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ctx, c, nil, fmt.Errorf("%w: %w", errUnknownMessage, err)
	case err != nil:
		return ctx, c, nil, err
	case c.Busy:
		return ctx, c, nil, errSessionBusy
	case c.SessionID == 0: // answered before the lease was asked for
		return ctx, c, nil, nil
	}
	ctx, lost := context.WithCancelCause(ctx)
	l := &runLease{sessionID: c.SessionID, runID: runID, lost: lost, renewedAt: now}
	rl.add(l)
	return ctx, c, l, nil
}

// releaseSession ends a lease the run did not end by committing (the run
// failed, was busy or is shutting down) and hands the session on, unless
// the oldest message still to answer is the run's own: its job runs again
// and hands it on then. If Postgres cannot be reached the lease lapses by
// itself and the sweeper hands the session on.
func (rl *runLeases) releaseSession(ctx context.Context, l *runLease, ownID int64, committed bool) {
	rl.remove(l.runID)
	l.lost(nil)
	if committed {
		return
	}
	ctx = context.WithoutCancel(ctx)
	err := store.InTx(ctx, rl.pool, func(tx pgx.Tx) error {
		held, err := store.EndSessionLease(ctx, tx, l.sessionID, l.runID)
		if err != nil || !held {
			return err
		}
		return rl.handOver(ctx, tx, l.sessionID, ownID)
	})
	if err != nil {
		rl.log.Warn("session lease not released; it lapses by itself", "session_id", l.sessionID, "run_id", l.runID, "err", err)
	}
}

// handOver enqueues the session's oldest message still to answer, in tx,
// unless it is ownID (whose job lives on). A message may then have two
// jobs; the second finds it answered or its session busy.
func (rl *runLeases) handOver(ctx context.Context, tx pgx.Tx, sessionID, ownID int64) error {
	next, channel, ok, err := store.OldestPendingInSession(ctx, tx, sessionID)
	if err != nil || !ok || next == ownID {
		return err
	}
	return rl.enqueueProcess(ctx, tx, next, channel)
}

// enqueueProcess inserts the job that answers inbound message id, in tx.
func (rl *runLeases) enqueueProcess(ctx context.Context, tx pgx.Tx, id int64, channel string) error {
	job := rl.processJob(id, channel, ops.JobMetadata(ctx))
	if _, err := rl.jobs.river.InsertTx(ctx, tx, job.Args, job.InsertOpts); err != nil {
		return fmt.Errorf("gateway: enqueue inbound %d: %w", id, err)
	}
	return nil
}

// processJob is the job that answers inbound message id; meta is its
// trace context.
func (rl *runLeases) processJob(id int64, channel string, meta []byte) river.InsertManyParams {
	return river.InsertManyParams{Args: ProcessInboundArgs{InboundID: id}, InsertOpts: &river.InsertOpts{
		Queue: rl.jobs.agentQueue(channel), MaxAttempts: agentAttempts, Metadata: meta,
	}}
}

// keepLeases renews this process's session leases every third of
// worker.run_lease and, on a full replica, sweeps lapsed ones every
// quarter, until ctx ends. A process working queues of its own (a
// terminal's) does not sweep: it would route other channels' messages to
// its own queue. Both run on a connection kept for them: under load the
// runs and callbacks can hold every other one for longer than a lease,
// and a renewal waiting its turn in the pool let a live run's lease lapse
// (the run was stopped, and its message answered again elsewhere).
func (rl *runLeases) keepLeases(ctx context.Context) {
	term := rl.term
	renew, sweep := time.NewTicker(term/3), time.NewTicker(term/4)
	defer renew.Stop()
	defer sweep.Stop()
	if !rl.sweeps {
		sweep.Stop()
	}
	kept := store.Keep(ctx, rl.pool)
	defer kept.Release()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			c, err := kept.Get(ctx)
			switch {
			case err != nil:
				rl.renewLeases(ctx, rl.pool) // fails too, stopping runs whose lease lapsed
			case !rl.renewLeases(ctx, c):
				kept.Release()
			}
		case <-sweep.C:
			c, err := kept.Get(ctx)
			if err == nil {
				if _, err = rl.sweep(ctx, c); err != nil {
					kept.Release()
				}
			}
			if err != nil && ctx.Err() == nil {
				rl.log.Warn("lapsed session leases not swept", "err", err)
			}
		}
	}
}

// renewLeases extends every lease this replica's runs hold, in one
// statement. A run whose lease was taken over is stopped at once; when
// Postgres cannot be reached, a run is stopped once its lease has lapsed,
// since another replica may then take the session.
func (rl *runLeases) renewLeases(ctx context.Context, q store.Querier) bool {
	rl.mu.Lock()
	leases := make([]store.LeaseRef, 0, len(rl.m))
	for id, l := range rl.m {
		leases = append(leases, store.LeaseRef{SessionID: l.sessionID, RunID: id})
	}
	rl.mu.Unlock()
	if len(leases) == 0 {
		return true
	}
	now := rl.now()
	renewed, err := store.RenewSessionLeases(ctx, q, rl.replicaID, leases, now.Add(rl.term))
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			rl.log.Warn("session leases not renewed", "runs", len(leases), "err", err)
		}
		for _, l := range rl.m {
			if now.Sub(l.renewedAt) >= rl.term {
				l.lost(errLeaseLost)
			}
		}
		return false
	}
	ok := make(map[string]bool, len(renewed))
	for _, id := range renewed {
		ok[id] = true
	}
	for _, ref := range leases {
		id := ref.RunID
		l, live := rl.m[id]
		switch {
		case !live: // ended meanwhile
		case ok[id]:
			l.renewedAt = now
		default:
			rl.log.Warn("session lease taken over; stopping the run", "session_id", l.sessionID, "run_id", id)
			l.lost(errLeaseLost)
		}
	}
	return true
}

// SweepLeases takes session leases that lapsed (their replica died or lost
// Postgres) and hands their sessions on, and hands the answers whose
// replica did not send them in time to delivery jobs (inline.go), in one
// short transaction. Leases
// another replica is sweeping are skipped, so each is taken once. It
// returns how many it took.
func (g *Gateway) SweepLeases(ctx context.Context) (int, error) { return g.leases.sweep(ctx, g.pool) }

// sweep is SweepLeases on db (a pool, or the connection kept for it).
func (rl *runLeases) sweep(ctx context.Context, db store.Beginner) (int, error) {
	var n int
	err := store.InTx(ctx, db, func(tx pgx.Tx) error {
		lapsed, err := store.TakeLapsedLeases(ctx, tx, rl.now(), sweepBatch)
		if err != nil {
			return err
		}
		for _, l := range lapsed {
			rl.log.Warn("session lease lapsed; answering its message again", slog.Int64("session_id", l.SessionID),
				slog.Int64("inbound_id", l.InboundID), slog.String("holder", l.Holder))
			if err := rl.handOver(ctx, tx, l.SessionID, 0); err != nil {
				return err
			}
		}
		sends, err := takeLapsedInline(ctx, tx, rl.jobs, rl.now())
		if err != nil {
			return err
		}
		runs, err := takeLapsedInlineRuns(ctx, tx, rl, rl.now())
		n = len(lapsed) + sends + runs
		return err
	})
	return n, err
}
