package knowledge

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/gateway"
)

var _ gateway.JobFeature = (*Service)(nil)

// SyncArgs is one sync of knowledge.dir with the index.
type SyncArgs struct{}

// Kind implements river.JobArgs (stored with every job: never rename it).
func (SyncArgs) Kind() string { return "hermes.knowledge_sync" }

// AddWorkers implements gateway.JobFeature.
func (k *Service) AddWorkers(w *river.Workers) {
	river.AddWorker(w, &syncWorker{k: k})
}

// PeriodicJobs implements gateway.JobFeature: the leader syncs the
// folder at start and every knowledge.sync_interval, when there is one.
func (k *Service) PeriodicJobs() []*river.PeriodicJob {
	if k.kb.Cfg.Dir == "" {
		return nil
	}
	return []*river.PeriodicJob{gateway.LeaderJob(k.kb.Cfg.SyncInterval, SyncArgs{})}
}

type syncWorker struct {
	river.WorkerDefaults[SyncArgs]
	k *Service
}

func (w *syncWorker) Work(ctx context.Context, _ *river.Job[SyncArgs]) error {
	return w.k.SyncFolder(ctx)
}

// SyncFolder syncs knowledge.dir (Base.Sync) and logs what it did: the
// periodic job's work, and SIGHUP's on the replica that got it.
func (k *Service) SyncFolder(ctx context.Context) error {
	out, err := k.kb.Sync(ctx)
	if err != nil {
		k.s.Log.Error("knowledge: folder not synced", "dir", k.kb.Cfg.Dir, "err", err)
		return err
	}
	if len(out.Added)+len(out.Changed)+len(out.Removed) > 0 {
		k.s.Log.Info("knowledge: folder synced", "dir", k.kb.Cfg.Dir, "added", out.Added, "changed", out.Changed,
			"removed", out.Removed, "unchanged", out.Unchanged, "refused", len(out.Refused))
	}
	return nil
}
