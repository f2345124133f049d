package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
)

// A full replica runs the messages it accepts itself when it has a free
// agent worker, with no job (issue 39: the job cost three written rows
// and two to three transactions per answered message). The message's row
// is its queue entry: store.NewInbound.InlineUntil says until when this
// replica owns starting its run. From the run's claim on, the session's
// lease guards it as it guards any run (a replica dying mid-run leaves a
// lease that lapses and is swept). A replica dying between the commit
// and the claim leaves a pending message with no lease whose time runs
// out: the lease sweep hands it to a job. Whatever the run cannot finish
// (a failed model call to retry, a lost lease, a shutdown) goes to a job
// too, as River would have retried it. The agent queue's workers and
// these runs share worker.agent_concurrency's slots, so a replica still
// runs at most that many at once.

// inlineRuns are the runs this replica started without a job.
type inlineRuns struct {
	rn    *runner
	jobs  *Jobs
	pool  *pgxpool.Pool
	log   *slog.Logger
	slots chan struct{} // nil: this process runs nothing inline

	mu     sync.Mutex
	open   bool            // between start and stop: new runs may start
	ctx    context.Context // the runs' own; cancelled when a stop's grace ends
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start lets runs start, with ctx as their parent.
func (ir *inlineRuns) start(ctx context.Context) {
	if ir.slots == nil {
		return
	}
	ir.mu.Lock()
	defer ir.mu.Unlock()
	ir.ctx, ir.cancel = context.WithCancel(ctx)
	ir.open = true
}

// reserve takes a slot for a run of a message of channel, if one is free
// and this replica works channel's agent queue; the caller then either
// runs it (run) or gives the slot back (release).
func (ir *inlineRuns) reserve(channel string) bool {
	ir.mu.Lock()
	defer ir.mu.Unlock()
	if !ir.open || ir.jobs.agentQueue(channel) != QueueAgent {
		return false
	}
	select {
	case ir.slots <- struct{}{}:
		ir.wg.Add(1)
		return true
	default:
		return false
	}
}

// release gives back a slot reserve took for a message that is not run.
func (ir *inlineRuns) release() {
	<-ir.slots
	ir.wg.Done()
}

// run answers inbound message id of channel on a slot reserve took; meta
// is the trace context of its acceptance.
func (ir *inlineRuns) run(id int64, channel string, meta []byte) {
	go func() {
		defer ir.release()
		ctx := ops.WithLink(ir.ctx, ops.JobSpanContext(meta))
		err := ir.rn.process(ctx, id, false)
		switch {
		case err == nil, errors.Is(err, errSessionBusy): // the run before it hands the session on
		case errors.Is(err, errUnknownMessage): // forgotten meanwhile
		case errors.Is(err, errLeaseLost):
			ir.handToJob(id, channel, meta, leaseLostSnooze, agentAttempts)
		case errors.Is(err, errShuttingDown):
			ir.handToJob(id, channel, meta, 0, agentAttempts)
		default: // the run failed: its job retries it, this was its first attempt
			ir.log.Warn("run failed; its job retries it", "inbound_id", id, "err", err)
			ir.handToJob(id, channel, meta, time.Second, agentAttempts-1)
		}
	}()
}

// handToJob queues the job of message id, after wait, with attempts
// left. If Postgres cannot take it, the lease sweep does once the
// message's time runs out.
func (ir *inlineRuns) handToJob(id int64, channel string, meta []byte, wait time.Duration, attempts int) {
	ctx := context.WithoutCancel(ir.ctx)
	job := ir.rn.leases.processJob(id, channel, meta)
	// River schedules on the real clock, not on an injected one.
	job.InsertOpts.MaxAttempts, job.InsertOpts.ScheduledAt = attempts, time.Now().Add(wait)
	err := store.InTx(ctx, ir.pool, func(tx pgx.Tx) error {
		if err := store.EndInlineInbound(ctx, tx, id); err != nil {
			return err
		}
		_, err := ir.jobs.river.InsertTx(ctx, tx, job.Args, job.InsertOpts)
		return err
	})
	if err != nil {
		ir.log.Warn("message not handed to a job; the lease sweep will", "inbound_id", id, "err", err)
	}
}

// acquire takes a slot for a run of the agent queue's workers, waiting
// while every slot is taken; release it with the function returned.
func (ir *inlineRuns) acquire(ctx context.Context) (func(), error) {
	if ir == nil || ir.slots == nil {
		return func() {}, nil
	}
	select {
	case ir.slots <- struct{}{}:
		return func() { <-ir.slots }, nil
	case <-ctx.Done():
		return nil, errShuttingDown
	}
}

// stop lets no new run start and waits for the running ones until ctx
// ends, then cancels them (each hands its message to a job).
func (ir *inlineRuns) stop(ctx context.Context) {
	ir.mu.Lock()
	started := ir.cancel != nil
	ir.open = false
	ir.mu.Unlock()
	if !started { // never started: no run can have begun
		return
	}
	done := make(chan struct{})
	go func() { ir.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		ir.cancel()
		<-done
	}
	ir.cancel()
}

// takeLapsedInlineRuns hands the messages whose inline run never began in
// time to jobs, in tx (the lease sweep's).
func takeLapsedInlineRuns(ctx context.Context, tx pgx.Tx, rl *runLeases, now time.Time) (int, error) {
	lapsed, err := store.TakeLapsedInlineInbound(ctx, tx, now, sweepBatch)
	if err != nil {
		return 0, err
	}
	for _, m := range lapsed {
		if err := rl.enqueueProcess(ctx, tx, m.ID, m.Channel); err != nil {
			return 0, err
		}
	}
	return len(lapsed), nil
}
