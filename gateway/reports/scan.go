package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
)

// RunReportArgs is the job that runs one claimed report run.
type RunReportArgs struct {
	RunID int64 `json:"run_id"`
}

// Kind implements river.JobArgs.
func (RunReportArgs) Kind() string { return "hermes.run_report" }

// maxTicksPerScan bounds the on-time ticks one scan claims per report (a
// schedule with seconds scanned every few seconds).
const maxTicksPerScan = 60

// ScheduleReports claims every tick that is due by the gateway's clock,
// each with its run job in one transaction. Every replica calls it (every
// reports.scan_interval); the unique (report, fire time) claim lets one
// run per tick through. A tick more than reports.misfire_grace late was
// missed (every replica was down): the latest missed one runs once, or is
// skipped, per the report's catch_up. It returns the runs claimed here.
func (g *Gateway) ScheduleReports(ctx context.Context) (int, error) {
	active, err := store.ActiveReports(ctx, g.pool)
	if err != nil {
		return 0, err
	}
	claimed := 0
	for _, r := range active {
		n, err := g.scheduleReport(ctx, r)
		claimed += n
		if err != nil {
			return claimed, err
		}
	}
	return claimed, nil
}

func (g *Gateway) scheduleReport(ctx context.Context, r store.Report) (int, error) {
	sch, err := reports.ParseSchedule(r.Cron, r.TZ)
	if err != nil {
		g.log.Error("report schedule unreadable; not run", "report_id", r.ID, "err", err)
		return 0, nil
	}
	now := g.now()
	var onTime []time.Time
	var lastMissed time.Time
	for t := sch.Next(r.LastFireAt); !t.IsZero() && !t.After(now); t = sch.Next(t) {
		if now.Sub(t) > g.cfg.Reports.MisfireGrace {
			lastMissed = t
		} else if len(onTime) < maxTicksPerScan {
			onTime = append(onTime, t)
		}
	}
	claimed := 0
	if !lastMissed.IsZero() {
		if r.CatchUp == CatchUpRunOnce && len(onTime) == 0 {
			ok, err := g.claimReportRun(ctx, r, &lastMissed, store.TriggerCatchUp)
			if ok {
				claimed++
			}
			if err != nil {
				return claimed, err
			}
		} else if err := store.AdvanceReport(ctx, g.pool, r.ID, lastMissed); err != nil {
			return claimed, err
		}
	}
	for _, t := range onTime {
		ok, err := g.claimReportRun(ctx, r, &t, store.TriggerSchedule)
		if ok {
			claimed++
		}
		if err != nil {
			return claimed, err
		}
	}
	return claimed, nil
}

// claimReportRun records a run of report r and its job in one
// transaction; false when another replica claimed fireAt first.
func (g *Gateway) claimReportRun(ctx context.Context, r store.Report, fireAt *time.Time, trigger string) (bool, error) {
	var claimed bool
	err := store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
		runID, ok, err := store.ClaimReportRun(ctx, tx, r.ID, fireAt, trigger, g.now())
		if err != nil || !ok {
			return err
		}
		claimed = true
		return g.enqueueReportRun(ctx, tx, runID, r.Owner.Channel)
	})
	return claimed, err
}

// enqueueReportRun inserts run runID's job in the agent queue of the
// owner's channel (the console's own queue for `hermes demo`).
func (g *Gateway) enqueueReportRun(ctx context.Context, tx pgx.Tx, runID int64, ownerChannel string) error {
	queue, _ := g.queueFor(ownerChannel)
	if _, err := g.river.InsertTx(ctx, tx, RunReportArgs{RunID: runID}, &river.InsertOpts{Queue: queue, MaxAttempts: reportAttempts}); err != nil {
		return fmt.Errorf("gateway: enqueue report run %d: %w", runID, err)
	}
	return nil
}

// RunReportNow queues a run of report id now, outside its schedule.
// owner nil: the operator. Errors: store.ErrNotFound.
func (g *Gateway) RunReportNow(ctx context.Context, id int64, owner *store.ReportOwner) (int64, error) {
	var runID int64
	err := store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
		rep, err := store.GetReport(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		if runID, _, err = store.ClaimReportRun(ctx, tx, id, nil, store.TriggerManual, g.now()); err != nil {
			return err
		}
		return g.enqueueReportRun(ctx, tx, runID, rep.Owner.Channel)
	})
	return runID, err
}

// scanReports ticks ScheduleReports every reports.scan_interval until ctx
// ends.
func (g *Gateway) scanReports(ctx context.Context) {
	t := time.NewTicker(g.cfg.Reports.ScanInterval)
	defer t.Stop()
	for {
		if _, err := g.ScheduleReports(ctx); err != nil && !errors.Is(err, context.Canceled) {
			g.log.Error("report scan failed; next scan retries", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type runReportWorker struct {
	river.WorkerDefaults[RunReportArgs]
	g *Gateway
}

// Work runs the report and translates the outcome for River.
func (w *runReportWorker) Work(ctx context.Context, job *river.Job[RunReportArgs]) error {
	err := w.g.runReport(ctx, job.Args.RunID, job.Attempt >= job.MaxAttempts)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, errReportFailed):
		return river.JobCancel(err)
	}
	return err
}

// reportAttempts: a report whose skill or model fails is tried this often
// before the run is recorded as failed.
const reportAttempts = 3
