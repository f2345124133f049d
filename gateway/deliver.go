package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
)

// DeliverReplyArgs is the job that delivers a reply. It delivers every
// undelivered part of the reply's conversation in the order they were
// written, so a user's replies arrive in the order of their messages
// whichever job or replica runs first.
type DeliverReplyArgs struct {
	ReplyKey string `json:"reply_key"`
}

// Kind implements river.JobArgs.
func (DeliverReplyArgs) Kind() string { return "hermes.deliver_reply" }

// conversationBusySnooze is how long a delivery waits while another
// delivery of the same conversation runs (which sends this reply too).
const conversationBusySnooze = time.Second

// deferRecheck is how often a part held back for a live reply is looked
// at again.
const deferRecheck = 5 * time.Second

// delivery sends the outbox's parts: in each conversation's order, paced
// under the platform's limits, one recorded attempt at a time.
type delivery struct {
	pool     *pgxpool.Pool
	channels map[string]channels.Channel
	pacer    *pacer
	metrics  *ops.Metrics
	tracer   trace.Tracer
	now      func() time.Time
	log      *slog.Logger
	// sends bounds the deliveries this replica makes at once, the inline
	// sends and the delivery jobs together, to worker.delivery_concurrency
	// (nil: unbounded). Each holds a pool connection (its conversation's
	// lock) while it sends, and a send may need others (the platform's
	// access token, read or fetched under its lock). Inline sends, one per
	// run that just committed, were not bounded: a burst of them held the
	// whole pool, their token reads timed out, and BenchmarkAckThroughput
	// hung (TestDeliveryWaitsForASendSlot; the token side: store.
	// TestTokenMissesOfOneReplicaShareOneRead).
	sends chan struct{}
}

// deliverWorker works the delivery jobs: delivery's sends, and the wait
// for a live reply running here to show a held part.
type deliverWorker struct {
	river.WorkerDefaults[DeliverReplyArgs]
	d    *delivery
	live *liveReplies
}

// Work sends the undelivered parts of the reply's conversation, in order,
// holding the conversation's delivery lock. Each attempt is recorded before
// the send, so a retry after a crash tells the channel an earlier attempt
// may have reached the platform.
func (w *deliverWorker) Work(ctx context.Context, job *river.Job[DeliverReplyArgs]) (err error) {
	d := w.d
	if sc := ops.JobSpanContext(job.Metadata); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc) // the run's trace
	}
	ctx, span := d.tracer.Start(ctx, "hermes.deliver", trace.WithAttributes(attribute.String("hermes.reply_key", job.Args.ReplyKey)))
	defer func() { ops.EndSpan(span, err) }()
	last := job.Attempt >= job.MaxAttempts
	res, busy, err := d.deliverLocked(ctx, job.Args.ReplyKey, "", false, last)
	if err == nil && !busy && !res.deferUntil.IsZero() && w.live.awaitLive(ctx, res.held) {
		// The live reply running here showed the part (or gave up): what
		// is left goes now, not at a recheck later.
		res, busy, err = d.deliverLocked(ctx, job.Args.ReplyKey, "", false, last)
	}
	switch {
	case err != nil:
		return err
	case busy:
		return river.JobSnooze(conversationBusySnooze)
	case res.err != nil && res.permanent:
		return river.JobCancel(res.err)
	case res.err != nil:
		return res.err
	case !res.paceUntil.IsZero():
		// The platform's window is full: come back when it has room,
		// holding no worker or connection meanwhile.
		return river.JobSnooze(d.pacer.paceSnooze(res.paceUntil))
	case !res.deferUntil.IsZero():
		// Usually the live reply shows the part within seconds (which
		// queues the rest at once): look again soon rather than lingering
		// in the queue until the deadline.
		return river.JobSnooze(min(max(res.deferUntil.Sub(d.now()), 0), deferRecheck))
	}
	return nil
}

// deliverLocked delivers replyKey's conversation (orderKey, "" when the
// caller does not know it) under its delivery lock; inline: it is the
// send of the replica that committed replyKey (inline.go). Busy when another
// delivery holds it (and sends this reply too). The lock is released on
// return: a wait for a live reply holds up no later reply of the
// conversation.
func (dl *delivery) deliverLocked(ctx context.Context, replyKey, orderKey string, inline, lastAttempt bool) (res deliveryResult, busy bool, err error) {
	if dl.sends != nil {
		select {
		case dl.sends <- struct{}{}:
			defer func() { <-dl.sends }()
		case <-ctx.Done():
			return res, false, fmt.Errorf("gateway: delivering reply %s: %w", replyKey, ctx.Err())
		}
	}
	lock, parts, ok, err := store.TryLockUndelivered(ctx, dl.pool, replyKey, orderKey)
	if err != nil || !ok {
		return res, !ok, err
	}
	inlineKey := ""
	if inline {
		inlineKey = replyKey
	}
	var last delivered
	res = dl.deliverConversation(ctx, lock.Conn(), parts, inlineKey, lastAttempt, &last)
	if !last.set {
		lock.Unlock(ctx)
		return res, false, nil
	}
	// The send happened: record it even if the job is being cancelled.
	return res, false, lock.UnlockDelivered(ctx, last.id, last.msgID, last.at)
}

// delivered is a text part sent whose delivery is not recorded yet: it is
// recorded before the next part is sent, or with the lock's release.
type delivered struct {
	set   bool
	id    int64
	msgID string
	at    time.Time
}

// flush records d, if set.
func (d *delivered) flush(ctx context.Context, conn store.Querier) error {
	if !d.set {
		return nil
	}
	d.set = false
	return store.MarkDelivered(context.WithoutCancel(ctx), conn, d.id, d.msgID, d.at)
}

// deliveryResult is what delivering a conversation came to.
type deliveryResult struct {
	err        error     // a part failed; retry unless permanent
	permanent  bool      // the failure was permanent (the part is given up)
	deferUntil time.Time // some part waits until then (a live reply may show it)
	held       []string  // the reply keys of the parts that wait
	paceUntil  time.Time // the next part waits for room in its rate window
}

// deliverConversation sends the conversation's undelivered parts in order.
// A first part a live reply may still show (store.OutboxPart.HeldUntil)
// holds back the rest of its own reply, not the replies after it (each has
// its own live reply); it uses no slot of the rate windows. A hold that
// lapsed (a live reply that died with its replica, or a deadline passed)
// is dropped and the part sent.
// Its queries run on conn, the connection holding the conversation's lock,
// so a delivery uses one pool connection.
// inlineKey is the reply whose committing replica delivers (its attempt
// is recorded already, store.OutboxPart.PreRecorded); "" for a job.
func (dl *delivery) deliverConversation(ctx context.Context, conn *pgxpool.Conn, parts []store.OutboxPart, inlineKey string,
	lastAttempt bool, last *delivered) deliveryResult {
	var res deliveryResult
	heldBack := map[string]bool{}
	for _, p := range parts {
		if err := last.flush(ctx, conn); err != nil {
			return deliveryResult{err: err}
		}
		if heldBack[p.ReplyKey] {
			continue
		}
		if p.HeldUntil != nil {
			if until := *p.HeldUntil; dl.now().Before(until) {
				dl.metrics.Held(p.Channel)
				heldBack[p.ReplyKey] = true
				res.held = append(res.held, p.ReplyKey)
				if res.deferUntil.IsZero() || until.Before(res.deferUntil) {
					res.deferUntil = until
				}
				continue
			}
			if _, err := store.DropHold(ctx, conn, p.ReplyKey); err != nil {
				return deliveryResult{err: err}
			}
		}
		ch, ok := dl.channels[p.Channel]
		if !ok {
			err := fmt.Errorf("gateway: no channel %q configured for reply %s", p.Channel, p.ReplyKey)
			_ = store.MarkSendError(context.WithoutCancel(ctx), conn, p.ID, err.Error(), true, dl.now())
			return deliveryResult{err: err, permanent: true}
		}
		_, retryAt, err := dl.pacer.pace(ctx, conn, ch, p)
		switch {
		case err != nil:
			return deliveryResult{err: err}
		case !retryAt.IsZero():
			// The parts after it wait too: they go out in order.
			res.paceUntil = retryAt
			return res
		}
		if err := dl.sendPart(ctx, conn, ch, p, p.ReplyKey == inlineKey && p.PreRecorded(), lastAttempt, last); err != nil {
			return deliveryResult{err: err, permanent: errors.Is(err, channels.ErrPermanent)}
		}
	}
	return res
}

// sendPart makes one recorded attempt at one part (recorded already when
// preRecorded). An image is uploaded first, once (see uploadOnce). A text
// part's delivery is left in last for the caller to record.
func (dl *delivery) sendPart(ctx context.Context, conn store.Querier, ch channels.Channel, p store.OutboxPart, preRecorded, lastAttempt bool,
	last *delivered) error {
	if p.CardID != "" {
		return dl.sendCardPart(ctx, conn, ch, p, lastAttempt)
	}
	mediaID, err := dl.uploadOnce(ctx, conn, ch, p)
	if err != nil {
		return dl.failedPart(ctx, conn, p, err, p.Attempts, lastAttempt)
	}
	attempts, firstAt := p.Attempts, dl.now()
	if p.FirstAttemptAt != nil {
		firstAt = *p.FirstAttemptAt
	}
	if !preRecorded {
		if attempts, firstAt, err = store.MarkAttempt(ctx, conn, p.ID, dl.now()); err != nil {
			return err
		}
	}
	out := outboundOf(p, attempts, firstAt)
	out.MediaID = mediaID
	res, sendErr := ch.Send(ctx, out)
	if sendErr != nil {
		return dl.failedPart(ctx, conn, p, sendErr, attempts, lastAttempt)
	}
	dl.metrics.Delivered(p.Channel, nil, false)
	*last = delivered{set: true, id: p.ID, msgID: res.MessageID, at: dl.now()}
	return nil
}

// outboundOf is part p as its attempt number attempts (from 1) hands it
// to the channel.
func outboundOf(p store.OutboxPart, attempts int, firstAt time.Time) channels.Outbound {
	return channels.Outbound{
		Account: p.Account, ReplyTo: p.ReplyTo, Format: p.Format, Text: p.Text, Image: p.Image,
		Part: p.Part, Parts: p.Parts, Answer: strings.HasPrefix(p.ReplyKey, store.AnswerKeyPrefix),
		Key:     fmt.Sprintf("%s/%d", p.ReplyKey, p.Part),
		Attempt: attempts - 1, FirstAttemptUnix: firstAt.Unix(),
	}
}

// failedPart records a failed attempt at p (its upload or its send) and
// returns sendErr; the part is given up when the error is permanent or
// this was the job's last attempt.
func (dl *delivery) failedPart(ctx context.Context, conn store.Querier, p store.OutboxPart, sendErr error, attempts int, lastAttempt bool) error {
	giveUp := errors.Is(sendErr, channels.ErrPermanent) || lastAttempt
	dl.metrics.Delivered(p.Channel, sendErr, giveUp)
	if err := store.MarkSendError(context.WithoutCancel(ctx), conn, p.ID, sendErr.Error(), giveUp, dl.now()); err != nil {
		return err
	}
	dl.log.Error("reply delivery failed", "reply_key", p.ReplyKey, "part", p.Part,
		"attempt", attempts, "given_up", giveUp, "err", sendErr)
	return sendErr
}

// mediaExpiryMargin: a stored media id this close to its expiry is
// uploaded again rather than sent, so that it is still valid when the
// platform reads the message.
const mediaExpiryMargin = time.Hour

// uploadOnce returns the media id an image part is sent with: the one
// stored with the part while the platform still keeps it, or a new upload,
// stored before the send. Every attempt of the part thus sends the same
// id, and a platform's duplicate check (WeCom's enable_duplicate_check
// compares it) drops the copy of an attempt whose answer was lost. ""
// when the channel uploads in Send itself or the part is no image.
func (dl *delivery) uploadOnce(ctx context.Context, conn store.Querier, ch channels.Channel, p store.OutboxPart) (string, error) {
	up, ok := ch.(channels.Uploader)
	if !ok || p.Format != channels.FormatImage || p.Image == nil {
		return "", nil
	}
	now := dl.now()
	if p.MediaID != "" && (p.MediaExpiresAt == nil || now.Add(mediaExpiryMargin).Before(*p.MediaExpiresAt)) {
		return p.MediaID, nil
	}
	media, err := up.Upload(ctx, p.Account, p.Image)
	if err != nil {
		return "", err
	}
	if media.ID == "" {
		return "", fmt.Errorf("gateway: %s upload for reply %s returned no media id", p.Channel, p.ReplyKey)
	}
	var expires time.Time
	if media.Lifetime > 0 {
		expires = now.Add(media.Lifetime) // counted from before the upload: on the safe side
	}
	if err := store.SetMedia(ctx, conn, p.ID, media.ID, now, expires); err != nil {
		return "", err
	}
	return media.ID, nil
}

// NextRetry keeps delivery retries short at first (a platform hiccup) and
// bounded (an operator fixing a trusted-IP list).
func (w *deliverWorker) NextRetry(job *river.Job[DeliverReplyArgs]) time.Time {
	backoff := []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute}
	i := min(job.Attempt-1, len(backoff)-1)
	return time.Now().Add(backoff[max(i, 0)]) // River schedules on the real clock
}
