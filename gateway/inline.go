package gateway

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
)

// An answer is sent by the replica that committed it, right after the
// commit, with no delivery job (issue 39: the job cost three written rows
// and about two transactions per answered message). Its parts carry
// store.Reply.InlineUntil: the time this replica owns their sending.
// Whatever the send cannot finish at once — the conversation's delivery
// lock is held elsewhere, its rate window is full, a live reply may
// still show the first part, the platform failed — is handed to a
// delivery job, which goes on as it always did. A replica that dies
// between the commit and the send leaves parts whose time runs out; any
// replica's lease sweep (leases_run.go) hands them to a delivery job. So
// a reply goes out once, in its conversation's order, as before; only the
// usual case saves the job.

// inlineReplies are the replies a commit queued for this replica to send
// at once; the Outbox fills it for a ctx that carries it (withInline).
type inlineReplies struct {
	from    time.Time // the commit's time
	until   time.Time // when the parts' time runs out (set at the commit)
	replies []store.InlineReply
}

type inlineKey struct{}

// withInline has the Outbox queue ctx's answers for inline sending, into
// inl, with until as their time.
func withInline(ctx context.Context, inl *inlineReplies) context.Context {
	return context.WithValue(ctx, inlineKey{}, inl)
}

// inlineOf is ctx's inlineReplies, nil when the replies go to delivery jobs.
func inlineOf(ctx context.Context) *inlineReplies {
	inl, _ := ctx.Value(inlineKey{}).(*inlineReplies)
	return inl
}

// sendInline sends the replies of inl, each as a delivery job would, and
// hands what it could not finish to a delivery job.
func (dl *delivery) sendInline(ctx context.Context, jobs *Jobs, inl *inlineReplies) {
	for _, r := range inl.replies {
		if done, unsent := dl.sendOneInline(ctx, r); !done {
			dl.handToJob(ctx, jobs, r, unsent)
		}
	}
}

// sendOneInline delivers r's conversation once; it reports whether
// nothing of r is left for a delivery job, and else whether what is left
// never reached the platform (nothing failed: the conversation was busy,
// its window full, a part held).
func (dl *delivery) sendOneInline(ctx context.Context, r store.InlineReply) (done, unsent bool) {
	ctx, span := dl.tracer.Start(ctx, "hermes.deliver", trace.WithAttributes(attribute.String("hermes.reply_key", r.Key),
		attribute.Bool("hermes.inline", true)))
	res, busy, err := dl.deliverLocked(ctx, r.Key, r.OrderKey, true, false)
	switch {
	case err != nil:
	case res.err != nil:
		err = res.err
	}
	ops.EndSpan(span, err)
	return err == nil && !busy && res.paceUntil.IsZero() && res.deferUntil.IsZero(), err == nil
}

// handToJob queues r's delivery job (unsent: see store.EndInline). If
// Postgres cannot take it, the lease sweep does once the parts' time runs
// out.
func (dl *delivery) handToJob(ctx context.Context, jobs *Jobs, r store.InlineReply, unsent bool) {
	ctx = context.WithoutCancel(ctx)
	err := store.InTx(ctx, dl.pool, func(tx pgx.Tx) error {
		if err := store.EndInline(ctx, tx, r.Key, unsent); err != nil {
			return err
		}
		return jobs.enqueueDelivery(ctx, tx, r.Channel, r.Account, r.Key)
	})
	if err != nil {
		dl.log.Warn("reply not handed to a delivery job; the lease sweep will", "reply_key", r.Key, "err", err)
	}
}

// takeLapsedInline hands the replies whose inline sending ran out of time
// to delivery jobs, in tx (the lease sweep's).
func takeLapsedInline(ctx context.Context, tx pgx.Tx, jobs *Jobs, now time.Time) (int, error) {
	lapsed, err := store.TakeLapsedInline(ctx, tx, now, sweepBatch)
	if err != nil {
		return 0, err
	}
	for _, r := range lapsed {
		if err := jobs.enqueueDelivery(ctx, tx, r.Channel, r.Account, r.Key); err != nil {
			return 0, err
		}
	}
	return len(lapsed), nil
}
