package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
)

// ProcessInboundArgs is the job that answers one inbound message.
type ProcessInboundArgs struct {
	InboundID int64 `json:"inbound_id"`
}

// Kind implements river.JobArgs.
func (ProcessInboundArgs) Kind() string { return "hermes.process_inbound" }

var _ channels.Sink = (*Gateway)(nil)

// Accept stores a verified inbound message and, if it is new and needs an
// answer, enqueues the job that will answer it — in one transaction, so a
// message the platform was told "200" about is never lost and a repeated
// message enqueues nothing. A group message not addressed to the bot (no
// @-mention, no configured prefix) is not stored at all. The message's
// single-use Nonce, if any, is claimed in the same transaction (see
// channels.Sink.Accept), for unaddressed messages too (and for one without
// a sender, handed over for its proof only): otherwise the captured
// signature of one could be sent again with an addressed body. A new
// message on an account that shows its answers live (Limits.LiveDeadline)
// is stored with a hold on its answer's first part, and the live reply
// this replica pushes starts once it is committed (live.go).
//
// Errors wrap channels.ErrUnavailable: nothing was stored, and the caller
// must answer so that the platform retries; or channels.ErrReplayed:
// nothing was stored, and the caller refuses the request.
func (g *Gateway) Accept(ctx context.Context, in channels.Inbound) (receipt channels.Receipt, err error) {
	start := time.Now()
	ctx, span := g.tracer.Start(ctx, "hermes.accept", trace.WithAttributes(
		attribute.String("hermes.channel", in.Channel), attribute.String("hermes.account", in.Account)))
	defer func() {
		g.metrics.Accepted(in.Channel, receipt, err, time.Since(start))
		span.SetAttributes(attribute.Bool("hermes.new", receipt.New))
		ops.EndSpan(span, err)
	}()
	status, addressed := store.InboundPending, true
	switch {
	case in.Nonce != "" && in.Sender.UserID == "":
		// Nobody to answer: the channel hands it over for its proof only.
		addressed = false
	case in.MsgType == channels.TypeEvent:
		// Events (entering the chat, ...) are recorded, not answered.
		status = store.InboundIgnored
	case in.ChatType == channels.ChatGroup:
		in.Text, addressed = isAddressed(g.groupPolicy(in), in)
	}
	if !addressed && in.Nonce == "" {
		return channels.Receipt{}, nil
	}
	received := g.now()
	live := g.live.liveFor(in, status, received)
	var id int64
	err = store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
		if in.Nonce != "" {
			first, err := g.claimNonce(ctx, tx, in)
			if err != nil {
				return err
			}
			if !first {
				// The same delivery again stores nothing new: its first
				// stored what was to be stored, or nothing.
				receipt, err = g.repeatReceipt(ctx, tx, in)
				return err
			}
		}
		if !addressed {
			return nil
		}
		var ok bool
		id, ok, err = store.InsertInboundHeld(ctx, tx, in, status, live.hold)
		if err != nil {
			return err
		}
		if !ok {
			// A repeat: the platform did not get our first answer. Answer it
			// the same way (a streaming platform reopens the same stream).
			receipt, err = g.repeatReceipt(ctx, tx, in)
			return err
		}
		receipt = channels.Receipt{New: true, Answer: status == store.InboundPending}
		if !receipt.Answer {
			return nil
		}
		return g.leases.enqueueProcess(ctx, tx, id, in.Channel)
	})
	switch {
	case errors.Is(err, channels.ErrReplayed):
		return channels.Receipt{}, err
	case err != nil:
		return channels.Receipt{}, fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
	}
	if receipt.New && live.replier != nil {
		g.live.startLive(live, in, id, received)
	}
	return receipt, nil
}

// claimNonce claims in's nonce for its message in tx. first is false when
// the message had claimed it before (the platform delivering it again with
// the same signature). Errors wrap channels.ErrReplayed when another
// message holds it.
func (g *Gateway) claimNonce(ctx context.Context, tx pgx.Tx, in channels.Inbound) (first bool, err error) {
	claimed, heldBy, err := store.ClaimNonce(ctx, tx, in.Channel, in.Account, in.Nonce, in.MsgID, in.NonceExpires, g.now())
	switch {
	case err != nil:
		return false, err
	case claimed:
		return true, nil
	case heldBy != in.MsgID:
		// Message ids come from the caller's body; neither is logged as
		// proof of anything, only to find the two requests.
		return false, fmt.Errorf("gateway: %s/%s message %q: %w (first used by %q)", in.Channel, in.Account, in.MsgID, channels.ErrReplayed, heldBy)
	}
	return false, nil
}

// repeatReceipt answers a message delivered before, as the first delivery
// was answered: a stored message is answered unless it was ignored; one
// never stored (not for the bot) is not answered.
func (g *Gateway) repeatReceipt(ctx context.Context, tx pgx.Tx, in channels.Inbound) (channels.Receipt, error) {
	prev, err := store.InboundStatus(ctx, tx, in.Channel, in.Account, in.MsgID)
	return channels.Receipt{Answer: prev != "" && prev != store.InboundIgnored}, err
}

// forgetNoncesArgs is the leader's periodic housekeeping of the nonce
// claims: those whose signed timestamp has left its window are deleted,
// the platform's own check refusing such a callback from then on.
type forgetNoncesArgs struct{}

// Kind implements river.JobArgs.
func (forgetNoncesArgs) Kind() string { return "hermes.forget_nonces" }

type forgetNoncesWorker struct {
	river.WorkerDefaults[forgetNoncesArgs]
	g *Gateway
}

func (w *forgetNoncesWorker) Work(ctx context.Context, _ *river.Job[forgetNoncesArgs]) error {
	_, err := store.ForgetNonces(ctx, w.g.pool, w.g.now())
	return err
}

// Progress reads how far the answer to ref has come: the run's draft, then
// the final reply's first part.
func (g *Gateway) Progress(ctx context.Context, ref channels.MessageRef) (channels.Progress, error) {
	p, err := store.ProgressOf(ctx, g.pool, ref.Channel, ref.Account, ref.MsgID)
	if err != nil {
		return channels.Progress{}, fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
	}
	if !p.Found || p.Status == store.InboundIgnored {
		return channels.Progress{}, nil
	}
	out := channels.Progress{Known: true, Text: p.Draft, Received: p.ReceivedAt}
	if p.Parts > 0 {
		out.Text, out.Done, out.More, out.Shown, out.Parts = p.First, true, p.Parts > 1, p.Shown, p.Parts
	}
	return out, nil
}

// Shown records that a stream the platform polls showed the first part of
// ref's reply, and has the parts after it delivered now.
func (g *Gateway) Shown(ctx context.Context, ref channels.MessageRef) error {
	p, err := store.ProgressOf(ctx, g.pool, ref.Channel, ref.Account, ref.MsgID)
	if err != nil || !p.Found || p.Parts == 0 {
		return err
	}
	return g.live.firstPartShown(ctx, ref.Channel, ref.Account, p.InboundID)
}

// Refused counts a refused callback of channel/account by the check it
// failed (console: the channel's last refusal). Only the check word and
// the time are stored.
func (g *Gateway) Refused(ctx context.Context, channel, account, check string) {
	if err := store.RecordRefusal(ctx, g.pool, channel, account, check, g.now()); err != nil {
		g.log.Warn("callback refusal not recorded", "channel", channel, "account", account, "check", check, "err", err)
	}
}

// enqueueDelivery inserts the delivery job of a reply written in tx.
func (g *Gateway) enqueueDelivery(ctx context.Context, tx pgx.Tx, channel, account, replyKey string) error {
	if _, err := g.river.InsertTx(ctx, tx, DeliverReplyArgs{ReplyKey: replyKey},
		&river.InsertOpts{Queue: g.deliveryQueue(channel, account), Metadata: ops.JobMetadata(ctx)}); err != nil {
		return fmt.Errorf("gateway: enqueue delivery of %s: %w", replyKey, err)
	}
	return nil
}

// groupPolicy is the policy of in's chat: the chat's, else the account's,
// else the default; a mention is required unless a level says otherwise.
func (g *Gateway) groupPolicy(in channels.Inbound) config.GroupPolicy {
	p := g.cfg.Groups.GroupPolicy
	for _, over := range []config.GroupPolicy{g.cfg.Groups.Accounts[in.Account], g.cfg.Groups.Chats[in.ChatID]} {
		if over.RequireMention != nil {
			p.RequireMention = over.RequireMention
		}
		if over.Prefixes != nil {
			p.Prefixes = over.Prefixes
		}
	}
	return p
}

// isAddressed reports whether a group message is for the bot, and the text
// the model sees: without the configured prefix that addressed it (the
// channel already removed the bot's mention).
func isAddressed(p config.GroupPolicy, in channels.Inbound) (string, bool) {
	text := strings.TrimSpace(in.Text)
	for _, prefix := range p.Prefixes {
		if prefix != "" && strings.HasPrefix(text, prefix) {
			return strings.TrimSpace(strings.TrimPrefix(text, prefix)), true
		}
	}
	if in.Mentioned || (p.RequireMention != nil && !*p.RequireMention) {
		return text, true
	}
	return "", false
}
