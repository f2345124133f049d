package reports

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/gateway/reports/schedule"
	"github.com/hermes-gw/hermes/gateway/store"
)

// maxTicksPerScan bounds the on-time ticks one scan claims per report (a
// schedule with seconds scanned every few seconds).
const maxTicksPerScan = 60

// ScheduleReports claims every tick that is due by the gateway's clock,
// each with its run job in one transaction. Every replica calls it (every
// reports.scan_interval); the unique (report, fire time) claim lets one
// run per tick through. A tick more than reports.misfire_grace late was
// missed (every replica was down): the latest missed one runs once, or is
// skipped, per the report's catch_up. It returns the runs claimed here.
func (s *Service) ScheduleReports(ctx context.Context) (int, error) {
	active, err := store.ActiveReports(ctx, s.gw.Pool)
	if err != nil {
		return 0, err
	}
	claimed := 0
	for _, r := range active {
		n, err := s.scheduleReport(ctx, r)
		claimed += n
		if err != nil {
			return claimed, err
		}
	}
	return claimed, nil
}

func (s *Service) scheduleReport(ctx context.Context, r store.Report) (int, error) {
	sch, err := schedule.Parse(r.Cron, r.TZ)
	if err != nil {
		s.gw.Log.Error("report schedule unreadable; not run", "report_id", r.ID, "err", err)
		return 0, nil
	}
	now := s.gw.Now()
	var onTime []time.Time
	var lastMissed time.Time
	for t := sch.Next(r.LastFireAt); !t.IsZero() && !t.After(now); t = sch.Next(t) {
		if now.Sub(t) > s.gw.Config.Reports.MisfireGrace {
			lastMissed = t
		} else if len(onTime) < maxTicksPerScan {
			onTime = append(onTime, t)
		}
	}
	claimed := 0
	if !lastMissed.IsZero() {
		if r.CatchUp == CatchUpRunOnce && len(onTime) == 0 {
			ok, err := s.claimReportRun(ctx, r, &lastMissed, store.TriggerCatchUp)
			if ok {
				claimed++
			}
			if err != nil {
				return claimed, err
			}
		} else if err := store.AdvanceReport(ctx, s.gw.Pool, r.ID, lastMissed); err != nil {
			return claimed, err
		}
	}
	for _, t := range onTime {
		ok, err := s.claimReportRun(ctx, r, &t, store.TriggerSchedule)
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
func (s *Service) claimReportRun(ctx context.Context, r store.Report, fireAt *time.Time, trigger string) (bool, error) {
	var claimed bool
	err := store.InTx(ctx, s.gw.Pool, func(tx pgx.Tx) error {
		runID, ok, err := store.ClaimReportRun(ctx, tx, r.ID, fireAt, trigger, s.gw.Now())
		if err != nil || !ok {
			return err
		}
		claimed = true
		return s.enqueueReportRun(ctx, tx, runID, r.Owner.Channel)
	})
	return claimed, err
}

// enqueueReportRun inserts run runID's job in the agent queue of the
// owner's channel (the console's own queue for `hermes demo`).
func (s *Service) enqueueReportRun(ctx context.Context, tx pgx.Tx, runID int64, ownerChannel string) error {
	return s.gw.Jobs.InsertTx(ctx, tx, ownerChannel, RunArgs{RunID: runID}, river.InsertOpts{MaxAttempts: runAttempts})
}

// RunReportNow queues a run of report id now, outside its schedule.
// owner nil: the operator. Errors: store.ErrNotFound.
func (s *Service) RunReportNow(ctx context.Context, id int64, owner *store.ReportOwner) (int64, error) {
	var runID int64
	err := store.InTx(ctx, s.gw.Pool, func(tx pgx.Tx) error {
		rep, err := store.GetReport(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		if runID, _, err = store.ClaimReportRun(ctx, tx, id, nil, store.TriggerManual, s.gw.Now()); err != nil {
			return err
		}
		return s.enqueueReportRun(ctx, tx, runID, rep.Owner.Channel)
	})
	return runID, err
}

// PauseReport pauses (true) or resumes (false) report id; owner nil: the
// operator (any owner's). Errors: store.ErrNotFound.
func (s *Service) PauseReport(ctx context.Context, id int64, owner *store.ReportOwner, paused bool) error {
	return store.SetReportPaused(ctx, s.gw.Pool, id, owner, paused, s.gw.Now())
}
