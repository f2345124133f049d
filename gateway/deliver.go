package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
)

type deliverWorker struct {
	river.WorkerDefaults[DeliverReplyArgs]
	g *Gateway
}

// Work sends the undelivered parts of one reply, in order. Each attempt is
// recorded before the send, so a retry after a crash tells the channel an
// earlier attempt may have reached the platform (WeCom then suppresses the
// duplicate server-side).
func (w *deliverWorker) Work(ctx context.Context, job *river.Job[DeliverReplyArgs]) error {
	g := w.g
	parts, err := store.UndeliveredParts(ctx, g.pool, job.Args.ReplyKey)
	if err != nil {
		return err
	}
	lastAttempt := job.Attempt >= job.MaxAttempts
	for _, p := range parts {
		ch, ok := g.channels[p.Channel]
		if !ok {
			return river.JobCancel(fmt.Errorf("gateway: no channel %q configured for reply %s", p.Channel, p.ReplyKey))
		}
		attempts, firstAt, err := store.MarkAttempt(ctx, g.pool, p.ID, g.now())
		if err != nil {
			return err
		}
		res, sendErr := ch.Send(ctx, channels.Outbound{
			Account:          p.Account,
			ReplyTo:          p.ReplyTo,
			Text:             p.Text,
			Attempt:          attempts - 1,
			FirstAttemptUnix: firstAt.Unix(),
		})
		if sendErr != nil {
			permanent := errors.Is(sendErr, channels.ErrPermanent)
			giveUp := permanent || lastAttempt
			if err := store.MarkSendError(context.WithoutCancel(ctx), g.pool, p.ID, sendErr.Error(), giveUp, g.now()); err != nil {
				return err
			}
			g.log.Error("reply delivery failed", "reply_key", p.ReplyKey, "part", p.Part,
				"attempt", attempts, "given_up", giveUp, "err", sendErr)
			if permanent {
				return river.JobCancel(sendErr)
			}
			return sendErr
		}
		// The send happened: record it even if the job is being cancelled.
		if err := store.MarkDelivered(context.WithoutCancel(ctx), g.pool, p.ID, res.MessageID, g.now()); err != nil {
			return err
		}
	}
	return nil
}

// NextRetry keeps delivery retries short at first (a platform hiccup) and
// bounded (an operator fixing a trusted-IP list).
func (w *deliverWorker) NextRetry(job *river.Job[DeliverReplyArgs]) time.Time {
	backoff := []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute}
	i := min(job.Attempt-1, len(backoff)-1)
	return time.Now().Add(backoff[max(i, 0)]) // River schedules on the real clock
}
