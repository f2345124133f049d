package gateway

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
)

// ProcessInboundArgs is the job that answers one inbound message.
type ProcessInboundArgs struct {
	InboundID int64 `json:"inbound_id"`
}

// Kind implements river.JobArgs.
func (ProcessInboundArgs) Kind() string { return "hermes.process_inbound" }

// DeliverReplyArgs is the job that delivers the parts of one reply.
type DeliverReplyArgs struct {
	ReplyKey string `json:"reply_key"`
}

// Kind implements river.JobArgs.
func (DeliverReplyArgs) Kind() string { return "hermes.deliver_reply" }

// Accept stores a verified inbound message and, if it is new and needs an
// answer, enqueues the job that will answer it — in one transaction, so a
// message the platform was told "200" about is never lost and a repeated
// message enqueues nothing. It returns whether the message was new. Errors
// mean nothing was stored: the caller must answer 5xx so the platform
// retries.
func (g *Gateway) Accept(ctx context.Context, in channels.Inbound) (bool, error) {
	status := store.InboundPending
	if in.MsgType == channels.TypeEvent {
		// Events (entering the app, ...) are recorded, not answered.
		status = store.InboundIgnored
	}
	var inserted bool
	err := store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
		id, ok, err := store.InsertInbound(ctx, tx, in, status)
		if err != nil {
			return err
		}
		inserted = ok
		if !ok || status != store.InboundPending {
			return nil
		}
		agentQueue, _ := g.queueFor(in.Channel)
		if _, err := g.river.InsertTx(ctx, tx, ProcessInboundArgs{InboundID: id}, &river.InsertOpts{
			Queue:       agentQueue,
			MaxAttempts: agentAttempts,
		}); err != nil {
			return fmt.Errorf("gateway: enqueue inbound %d: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return inserted, nil
}
