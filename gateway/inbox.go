package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/groupcommit"
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
// message enqueues nothing. Messages accepted at the same time share that
// transaction (database.group_commit, gateway/groupcommit): each returns
// once the commit that holds it is durable. A group message not addressed
// to the bot (no @-mention, no configured prefix) is not stored at all.
// The message's single-use Nonce, if any, is claimed in the same
// transaction (see channels.Sink.Accept), for unaddressed messages too
// (and for one without a sender, handed over for its proof only):
// otherwise the captured signature of one could be sent again with an
// addressed body. A new message on an account that shows its answers live
// (Limits.LiveDeadline) is stored with a hold on its answer's first part,
// and the live reply this replica pushes starts once it is committed
// (live.go).
//
// Errors wrap channels.ErrUnavailable: nothing was stored, and the caller
// must answer so that the platform retries; or channels.ErrReplayed:
// nothing was stored, and the caller refuses the request.
func (ib *inbox) Accept(ctx context.Context, in channels.Inbound) (receipt channels.Receipt, err error) {
	start := time.Now()
	ctx, span := ib.tracer.Start(ctx, "hermes.accept", trace.WithAttributes(
		attribute.String("hermes.channel", in.Channel), attribute.String("hermes.account", in.Account)))
	defer func() {
		ib.metrics.Accepted(in.Channel, receipt, err, time.Since(start))
		span.SetAttributes(attribute.Bool("hermes.new", receipt.New))
		ops.EndSpan(span, err)
	}()
	if in.Click != nil {
		return ib.acceptClick(ctx, in)
	}
	a := &accepted{in: in, status: store.InboundPending, addressed: true, meta: ops.JobMetadata(ctx)}
	switch {
	case in.Nonce != "" && in.Sender.UserID == "":
		// Nobody to answer: the channel hands it over for its proof only.
		a.addressed = false
	case in.MsgType == channels.TypeEvent:
		// Events (entering the chat, ...) are recorded, not answered.
		a.status = store.InboundIgnored
	case in.ChatType == channels.ChatGroup:
		a.in.Text, a.addressed = isAddressed(ib.groupPolicy(in), in)
	}
	if !a.addressed && in.Nonce == "" {
		return channels.Receipt{}, nil
	}
	received := ib.now()
	live := ib.live.liveFor(a.in, a.status, received)
	a.hold = live.hold
	a.inline = a.addressed && a.status == store.InboundPending && ib.runs.reserve(in.Channel)
	err = ib.acks.Do(ctx, a)
	if a.inline {
		if err == nil && a.err == nil && a.receipt.New && a.receipt.Answer {
			ib.runs.run(a.id, in.Channel, a.meta)
		} else {
			ib.runs.release()
		}
	}
	switch {
	case err == nil && a.err != nil:
		return channels.Receipt{}, a.err // replayed
	case err != nil:
		return channels.Receipt{}, fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
	}
	if a.receipt.New && live.replier != nil {
		ib.live.startLive(live, a.in, a.id, received)
	}
	return a.receipt, nil
}

// inbox is the channels.Sink: the stage every verified message enters
// (Accept), and what a channel asks of the answers (Progress, Shown) and
// tells of refusals (Refused). The Gateway is it (embedded).
type inbox struct {
	cfg     *config.Config
	pool    *pgxpool.Pool
	acks    *groupcommit.Committer[accepted] // the ack path's shared transactions
	live    *liveReplies                     // started once a message that shows its answer live commits
	leases  *runLeases                       // for the job that answers a message
	runs    *inlineRuns                      // or for running it here, with no job
	jobs    *Jobs
	outbox  *Outbox // a card's update when a tap finds it expired (cards.go)
	tracer  trace.Tracer
	metrics *ops.Metrics
	now     func() time.Time
	log     *slog.Logger
}

// accepted is one message Accept stores, on its way through a shared
// transaction, and its outcome there.
type accepted struct {
	in        channels.Inbound
	status    string
	addressed bool
	hold      store.Hold
	meta      []byte // the job's trace context (the caller's span)
	// inline: this replica reserved a worker to answer it itself once it
	// commits, with no job (inline_run.go).
	inline bool

	id      int64
	receipt channels.Receipt
	err     error // channels.ErrReplayed: refused, nothing stored for it
}

// writeAccepted stores the messages of one batch in tx: their nonces
// claimed in one statement, the new ones in one insert, their jobs in another.
// A replayed message is refused alone; any other error fails the batch
// (groupcommit then writes each message alone).
func (ib *inbox) writeAccepted(ctx context.Context, tx pgx.Tx, batch []*accepted) error {
	nonces, err := ib.claimNonces(ctx, tx, batch)
	if err != nil {
		return err
	}
	var fresh []*accepted
	var rows []store.NewInbound
	inlineUntil := ib.now().Add(ib.leases.term)
	for i, a := range batch {
		a.id, a.receipt, a.err = 0, channels.Receipt{}, nil
		switch n := nonces[i]; {
		case !n.Claimed && n.HeldBy != a.in.MsgID:
			// Message ids come from the caller's body; neither is logged as
			// proof of anything, only to find the two requests.
			a.err = fmt.Errorf("gateway: %s/%s message %q: %w (first used by %q)", a.in.Channel, a.in.Account, a.in.MsgID, channels.ErrReplayed, n.HeldBy)
			continue
		case !n.Claimed:
			// The same delivery again stores nothing new: its first
			// stored what was to be stored, or nothing.
			if a.receipt, err = ib.repeatReceipt(ctx, tx, a.in); err != nil {
				return err
			}
			continue
		}
		if a.addressed {
			row := store.NewInbound{In: a.in, Status: a.status, Hold: a.hold}
			if a.inline {
				row.InlineUntil = &inlineUntil
			}
			fresh, rows = append(fresh, a), append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	ids, err := store.InsertInbounds(ctx, tx, rows)
	if err != nil {
		return err
	}
	var jobs []river.InsertManyParams
	for i, a := range fresh {
		if ids[i] == 0 {
			// A repeat: the platform did not get our first answer. Answer
			// it the same way (a streaming platform reopens the same stream).
			if a.receipt, err = ib.repeatReceipt(ctx, tx, a.in); err != nil {
				return err
			}
			continue
		}
		a.id, a.receipt = ids[i], channels.Receipt{New: true, Answer: a.status == store.InboundPending}
		if a.receipt.Answer && !a.inline {
			jobs = append(jobs, ib.leases.processJob(a.id, a.in.Channel, a.meta))
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	if _, err := ib.jobs.river.InsertManyTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("gateway: enqueue %d inbound messages: %w", len(jobs), err)
	}
	return nil
}

// claimNonces claims the nonces of batch's messages in tx, in one
// statement, and returns each message's outcome; a message without a
// nonce counts as claimed.
func (ib *inbox) claimNonces(ctx context.Context, tx pgx.Tx, batch []*accepted) ([]store.NonceOutcome, error) {
	out := make([]store.NonceOutcome, len(batch))
	var claims []store.NonceClaim
	var of []int // the batch index of each claim
	for i, a := range batch {
		out[i].Claimed = true
		if in := a.in; in.Nonce != "" {
			claims, of = append(claims, store.NonceClaim{Channel: in.Channel, Account: in.Account, Nonce: in.Nonce, MsgID: in.MsgID, Expires: in.NonceExpires}), append(of, i)
		}
	}
	if len(claims) == 0 { // most platforms carry no nonce: no statement
		return out, nil
	}
	found, err := store.ClaimNonces(ctx, tx, claims, ib.now())
	for j, f := range found {
		out[of[j]] = f
	}
	return out, err
}

// repeatReceipt answers a message delivered before, as the first delivery
// was answered: a stored message is answered unless it was ignored; one
// never stored (not for the bot) is not answered.
func (ib *inbox) repeatReceipt(ctx context.Context, tx pgx.Tx, in channels.Inbound) (channels.Receipt, error) {
	prev, err := store.InboundStatus(ctx, tx, in.Channel, in.Account, in.MsgID)
	return channels.Receipt{Answer: prev != "" && prev != store.InboundIgnored}, err
}

// forgetNoncesArgs is the leader's periodic housekeeping of what the
// callbacks leave: nonce claims whose signed timestamp has left its
// window are deleted (the platform's own check refusing such a callback
// from then on), and the refusals per minute past store.RefusalHistory.
type forgetNoncesArgs struct{}

// Kind implements river.JobArgs.
func (forgetNoncesArgs) Kind() string { return "hermes.forget_nonces" }

type forgetNoncesWorker struct {
	river.WorkerDefaults[forgetNoncesArgs]
	pool *pgxpool.Pool
	now  func() time.Time
}

func (w *forgetNoncesWorker) Work(ctx context.Context, _ *river.Job[forgetNoncesArgs]) error {
	if _, err := store.ForgetNonces(ctx, w.pool, w.now()); err != nil {
		return err
	}
	return store.ForgetRefusalMinutes(ctx, w.pool, w.now())
}

// Progress reads how far the answer to ref has come: the run's draft, then
// the final reply's first part.
func (ib *inbox) Progress(ctx context.Context, ref channels.MessageRef) (channels.Progress, error) {
	return progressOf(ctx, ib.pool, ref)
}

// progressOf is Progress on q: for the channels (Sink) and the live
// replies running here alike.
func progressOf(ctx context.Context, q store.Querier, ref channels.MessageRef) (channels.Progress, error) {
	p, err := store.ProgressOf(ctx, q, ref.Channel, ref.Account, ref.MsgID)
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
func (ib *inbox) Shown(ctx context.Context, ref channels.MessageRef) error {
	p, err := store.ProgressOf(ctx, ib.pool, ref.Channel, ref.Account, ref.MsgID)
	if err != nil || !p.Found || p.Parts == 0 {
		return err
	}
	return ib.live.firstPartShown(ctx, ref.Channel, ref.Account, p.InboundID)
}

// Refused counts a refused callback of channel/account by the check it
// failed (console: the channel's last refusal). Only the check word and
// the time are stored.
func (ib *inbox) Refused(ctx context.Context, channel, account, check string) {
	if err := store.RecordRefusal(ctx, ib.pool, channel, account, check, ib.now()); err != nil {
		ib.log.Warn("callback refusal not recorded", "channel", channel, "account", account, "check", check, "err", err)
	}
}

// groupPolicy is the policy of in's chat: the chat's, else the account's,
// else the default; a mention is required unless a level says otherwise.
func (ib *inbox) groupPolicy(in channels.Inbound) config.GroupPolicy {
	p := ib.cfg.Groups.GroupPolicy
	for _, over := range []config.GroupPolicy{ib.cfg.Groups.Accounts[in.Account], ib.cfg.Groups.Chats[in.ChatID]} {
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
