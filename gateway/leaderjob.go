package gateway

import (
	"time"

	"github.com/riverqueue/river"
)

// LeaderJob is a job the leader of the replicas that work the delivery
// queue inserts every interval, and once at its start: a sweep, a purge,
// a check. args must be of a kind a worker was added for (AddWorkers).
// The one way a periodic job is set up, for the pipeline's own and every
// JobFeature's.
func LeaderJob(every time.Duration, args river.JobArgs) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) {
			return args, &river.InsertOpts{Queue: QueueDelivery}
		}, &river.PeriodicJobOpts{RunOnStart: true})
}
