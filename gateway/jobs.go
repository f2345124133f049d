package gateway

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/gateway/ops"
)

// Jobs is the job queue as the pipeline's stages and the features use it:
// which queue a job goes to, and inserting it in the caller's
// transaction, so a job is queued exactly when what made it commits. Its
// client is set once New has built it (features receive Jobs earlier, at
// Attach, and insert only once the gateway runs).
type Jobs struct {
	river *river.Client[pgx.Tx]
	// queueFor is Deps.QueueFor: a channel's agent and delivery queues.
	queueFor func(channel string) (agentQueue, deliveryQueue string)
	// exclusive maps "channel/account" of accounts whose one long
	// connection runs on one replica at a time to the queue of their
	// deliveries, which only that replica works.
	exclusive map[string]string
}

// InsertTx inserts args in tx into the agent queue of channel's jobs (the
// console's own queue for `hermes chat` and the demo), with opts' other
// settings and the caller's trace.
func (j *Jobs) InsertTx(ctx context.Context, tx pgx.Tx, channel string, args river.JobArgs, opts river.InsertOpts) error {
	opts.Queue = j.agentQueue(channel)
	if opts.Metadata == nil {
		opts.Metadata = ops.JobMetadata(ctx)
	}
	if _, err := j.river.InsertTx(ctx, tx, args, &opts); err != nil {
		return fmt.Errorf("gateway: enqueue %s: %w", args.Kind(), err)
	}
	return nil
}

// enqueueDelivery inserts the delivery job of a reply written in tx.
func (j *Jobs) enqueueDelivery(ctx context.Context, tx pgx.Tx, channel, account, replyKey string) error {
	if _, err := j.river.InsertTx(ctx, tx, DeliverReplyArgs{ReplyKey: replyKey},
		&river.InsertOpts{Queue: j.deliveryQueue(channel, account), Metadata: ops.JobMetadata(ctx)}); err != nil {
		return fmt.Errorf("gateway: enqueue delivery of %s: %w", replyKey, err)
	}
	return nil
}

// agentQueue is the queue of the jobs that answer channel's messages.
func (j *Jobs) agentQueue(channel string) string {
	q, _ := j.queueFor(channel)
	return q
}

// deliveryQueue is the queue of the jobs that deliver account's replies:
// the queue of the replica holding the account's one connection, when the
// platform allows only one.
func (j *Jobs) deliveryQueue(channel, account string) string {
	if q, ok := j.exclusive[channel+"/"+account]; ok {
		return q
	}
	_, q := j.queueFor(channel)
	return q
}

// isExclusive reports whether account's sends must go through the replica
// holding its one connection.
func (j *Jobs) isExclusive(channel, account string) bool {
	_, ok := j.exclusive[channel+"/"+account]
	return ok
}
