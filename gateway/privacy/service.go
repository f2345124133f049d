package privacy

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/gateway"
)

// retentionInterval is how often the leader erases content past
// privacy.retention.
const retentionInterval = time.Hour

// Service is the privacy feature of a gateway: the retention job.
type Service struct{ s gateway.Services }

var _ gateway.JobFeature = (*Service)(nil)

// New is a privacy service to attach to a gateway.
func New() *Service { return &Service{} }

// Attach implements gateway.Feature.
func (p *Service) Attach(s gateway.Services) error {
	p.s = s
	return nil
}

// AddWorkers implements gateway.JobFeature.
func (p *Service) AddWorkers(w *river.Workers) {
	river.AddWorker(w, &retentionWorker{p: p})
}

// PeriodicJobs implements gateway.JobFeature: the leader erases content
// past privacy.retention, hourly and at start.
func (p *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{gateway.LeaderJob(retentionInterval, RetentionArgs{})}
}

// RetentionArgs is one pass of the retention of message content.
type RetentionArgs struct{}

// Kind implements river.JobArgs (stored with every job: never rename it).
func (RetentionArgs) Kind() string { return "hermes.privacy_retention" }

type retentionWorker struct {
	river.WorkerDefaults[RetentionArgs]
	p *Service
}

func (w *retentionWorker) Work(ctx context.Context, _ *river.Job[RetentionArgs]) error {
	s := w.p.s
	cfg := s.Config.Privacy
	n, err := Retention(ctx, s.Pool, s.Now().Add(-cfg.Retention), cfg.RetentionBatch, s.Now)
	if n > 0 {
		s.Log.Info("message content past privacy.retention erased", "rows", n, "retention", cfg.Retention)
	}
	return err
}
