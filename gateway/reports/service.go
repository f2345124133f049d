package reports

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Service is scheduled reports: their definitions, the scanner that claims
// due ticks, the job that runs one, and the tools that manage them in
// chat. Wire it as one of the gateway's features (Deps.Features); its
// methods work once the gateway has attached it (gateway.New).
type Service struct {
	gw       gateway.Services
	attached bool
	defsOnce sync.Once
	defs     []toolDef // the management tools (ChatTools), made once
}

// errAttached: one Service was wired into a second gateway; each gateway
// needs its own (newFeatures makes them anew).
var errAttached = errors.New("reports: the service is attached to a gateway already")

var (
	_ gateway.JobFeature      = (*Service)(nil)
	_ gateway.RunningFeature  = (*Service)(nil)
	_ gateway.ChatToolFeature = (*Service)(nil)
)

// New is a reports service for one gateway.
func New() *Service { return &Service{} }

// Attach implements gateway.Feature. A Service serves one gateway:
// attached again, it returns an error and keeps the first.
func (s *Service) Attach(gw gateway.Services) error {
	if s.attached {
		return errAttached
	}
	s.gw, s.attached = gw, true
	return nil
}

// AddWorkers implements gateway.JobFeature: the job that runs a report.
func (s *Service) AddWorkers(w *river.Workers) { river.AddWorker(w, &runWorker{s: s}) }

// PeriodicJobs implements gateway.JobFeature: none; ticks are claimed by
// every full replica's scanner (Run), in Postgres.
func (s *Service) PeriodicJobs() []*river.PeriodicJob { return nil }

// Run implements gateway.RunningFeature: ScheduleReports every
// reports.scan_interval until ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.gw.Config.Reports.ScanInterval)
	defer t.Stop()
	for {
		if _, err := s.ScheduleReports(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.gw.Log.Error("report scan failed; next scan retries", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunArgs is the job that runs one claimed report run.
type RunArgs struct {
	RunID int64 `json:"run_id"`
}

// Kind implements river.JobArgs (stored with every job: never rename it).
func (RunArgs) Kind() string { return "hermes.run_report" }

// runAttempts: a report whose skill or model fails is tried this often
// before the run is recorded as failed.
const runAttempts = 3

type runWorker struct {
	river.WorkerDefaults[RunArgs]
	s *Service
}

// Work runs the report and translates the outcome for River.
func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	err := w.s.runReport(ctx, job.Args.RunID, job.Attempt >= job.MaxAttempts)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, errReportFailed):
		return river.JobCancel(err)
	}
	return err
}
