package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/guard"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Live replies: an answer shown while it grows (channels.LiveReplier),
// driven by channels.RunLive on the replica that accepted the message (for
// an exclusive long connection, the one holding it). Meanwhile the
// delivery layer holds the answer's first part back (store.Hold), so that
// the user does not get it twice: until the live reply showed it (then
// only the parts after it go) or ended without it (then the whole answer
// goes), at the latest until the platform's deadline. The hold of a live
// reply this replica runs lasts one worker.run_lease and is renewed while
// the loop runs: when the replica dies, its answers go out a lease term
// later instead of at the deadline.
//
// One loop per message: only the Accept that stored the message (New) starts
// one, and the inbox's unique key makes that one Accept across replicas;
// a platform's repeat of the message opens nothing.

// liveRecordTimeout bounds recording how a live reply ended, on a context
// of its own (the loop's ends at shutdown).
const liveRecordTimeout = 5 * time.Second

// liveReplies are the live replies running on this replica, and the
// renewer of their holds.
type liveReplies struct {
	cfg      *config.Config
	pool     *pgxpool.Pool
	channels map[string]channels.Channel
	jobs     *Jobs
	metrics  *ops.Metrics
	now      func() time.Time
	log      *slog.Logger
	mu       sync.Mutex
	ctx      context.Context    // nil before Start and once Stop began
	cancel   context.CancelFunc // ends ctx
	// keys are the running answers' reply keys, whose holds are renewed;
	// each one's channel is closed when its live reply has ended.
	keys map[string]chan struct{}
	wg   sync.WaitGroup // the loops and the renewer
}

// startLiveReplies lets Accept start live replies, until stopLiveReplies.
func (lv *liveReplies) startLiveReplies(ctx context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	lv.mu.Lock()
	lv.ctx, lv.cancel, lv.keys = ctx, cancel, map[string]chan struct{}{}
	lv.wg.Add(1)
	lv.mu.Unlock()
	go func() {
		defer lv.wg.Done()
		lv.renewHolds(ctx)
	}()
}

// stopLiveReplies ends the running live replies (each is abandoned and its
// answer goes as a message) and waits for them until ctx ends.
func (lv *liveReplies) stopLiveReplies(ctx context.Context) {
	lv.mu.Lock()
	cancel := lv.cancel
	lv.ctx, lv.cancel = nil, nil
	lv.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	done := make(chan struct{})
	go func() { lv.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// liveStart is what Accept needs to hold an answer and start its live
// reply.
type liveStart struct {
	hold    store.Hold           // zero: nothing to hold
	replier channels.LiveReplier // nil: the platform polls, or no live reply
	lim     channels.Limits
}

// liveFor is the live reply of a message to be stored with status, as
// received now: a hold of its first part until the platform's deadline
// when the platform polls, or for one lease term (renewed) when this
// replica will run the live reply. Nothing when the account shows no live
// replies, or when it pushes them and this replica runs none (before Start,
// while stopping): the answer then simply goes as a message.
func (lv *liveReplies) liveFor(in channels.Inbound, status string, now time.Time) liveStart {
	ch, ok := lv.channels[in.Channel]
	if !ok || status != store.InboundPending {
		return liveStart{}
	}
	lim := ch.Limits(in.Account)
	if lim.LiveDeadline <= 0 {
		return liveStart{}
	}
	closes := now.Add(lim.LiveDeadline)
	lr, pushed := ch.(channels.LiveReplier)
	if !pushed || lim.LiveInterval <= 0 {
		return liveStart{hold: store.Hold{Until: closes, ClosesAt: closes}, lim: lim}
	}
	lv.mu.Lock()
	running := lv.ctx != nil
	lv.mu.Unlock()
	if !running {
		return liveStart{}
	}
	until := now.Add(lv.cfg.Worker.RunLease)
	if closes.Before(until) {
		until = closes
	}
	return liveStart{hold: store.Hold{Until: until, ClosesAt: closes}, replier: lr, lim: lim}
}

// startLive runs the live reply to in (stored as inboundID, received at
// received) in a goroutine of its own, tracked until Stop.
func (lv *liveReplies) startLive(ls liveStart, in channels.Inbound, inboundID int64, received time.Time) {
	key := store.AnswerKey(inboundID)
	lv.mu.Lock()
	ctx := lv.ctx
	if ctx != nil {
		lv.keys[key] = make(chan struct{})
		lv.wg.Add(1)
	}
	lv.mu.Unlock()
	if ctx == nil {
		// Stop began since liveFor: nobody will show it, let it go.
		lv.endLive(context.Background(), in, inboundID, false, errors.New("stopping"))
		return
	}
	go func() {
		defer lv.wg.Done()
		var shown bool
		// The loop reads what the platform answers: a panic in it ends
		// this live reply only, and the answer goes as a message.
		err := guard.Run(func() (err error) {
			shown, err = channels.RunLive(ctx, channels.LiveRun{
				Replier: ls.replier,
				Open: channels.Outbound{
					Account: in.Account, ReplyTo: in.ReplyTo, Format: ls.lim.Format, Text: lv.cfg.Messages.Thinking,
					Part: 0, Parts: 1, Answer: true, Key: key + "/0",
				},
				Progress: channels.ProgressFunc(func(ctx context.Context) (channels.Progress, error) {
					return progressOf(ctx, lv.pool, channels.MessageRef{Channel: in.Channel, Account: in.Account, MsgID: in.MsgID})
				}),
				Received: received,
				Later:    lv.cfg.Messages.Later,
				Now:      lv.now,
			})
			return err
		})
		if errors.Is(err, guard.ErrPanic) {
			lv.metrics.Panicked(in.Channel, in.Account)
		}
		lv.endLive(ctx, in, inboundID, shown, err)
		lv.mu.Lock()
		close(lv.keys[key])
		delete(lv.keys, key) // after endLive: the hold is renewed until it is dropped
		lv.mu.Unlock()
	}()
}

// liveAwaitMax is how long a delivery that found an answer held waits for
// the live reply showing it, when this replica runs it: the answer was just
// written, and the live reply shows it at its next look (LiveInterval).
// Longer, the delivery snoozes instead of holding its worker.
const liveAwaitMax = 2 * time.Second

// awaitLive waits until the live replies of replyKeys that run on this
// replica have ended, at most liveAwaitMax; ended is false when one still
// runs, or none of them runs here (then only the hold's end tells).
func (lv *liveReplies) awaitLive(ctx context.Context, replyKeys []string) (ended bool) {
	lv.mu.Lock()
	var running []chan struct{}
	for _, k := range replyKeys {
		if done, ok := lv.keys[k]; ok {
			running = append(running, done)
		}
	}
	lv.mu.Unlock()
	if len(running) < len(replyKeys) {
		return false
	}
	timer := time.NewTimer(liveAwaitMax)
	defer timer.Stop()
	for _, done := range running {
		select {
		case <-done:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// endLive records how the live reply to inboundID ended: shown (only the
// parts after the first are delivered), or not (the hold is dropped and the
// whole answer delivered, now if it is written).
func (lv *liveReplies) endLive(ctx context.Context, in channels.Inbound, inboundID int64, shown bool, why error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liveRecordTimeout)
	defer cancel()
	log := lv.log.With("channel", in.Channel, "account", in.Account, "msg_id", in.MsgID, "inbound_id", inboundID)
	if shown {
		if err := lv.firstPartShown(ctx, in.Channel, in.Account, inboundID); err != nil {
			log.Warn("live reply showed the answer but it is not recorded; its first part may be sent again", "err", err)
		}
		return
	}
	key := store.AnswerKey(inboundID)
	err := store.InTx(ctx, lv.pool, func(tx pgx.Tx) error {
		waiting, err := store.DropHold(ctx, tx, key)
		if err != nil || !waiting {
			return err // not written yet: its delivery is queued with it
		}
		return lv.jobs.enqueueDelivery(ctx, tx, in.Channel, in.Account, key)
	})
	switch {
	case err != nil:
		log.Warn("live reply ended; its hold is not dropped and lapses by itself", "why", why, "err", err)
	case errors.Is(why, channels.ErrLiveDeadline):
		log.Info("live reply closed at its deadline; the answer goes as a message", "why", why)
	default:
		log.Warn("live reply ended without the answer; it goes as a message", "why", why)
	}
}

// firstPartShown records that the first part of inboundID's answer was
// shown (a live reply) and has the parts after it delivered now.
func (lv *liveReplies) firstPartShown(ctx context.Context, channel, account string, inboundID int64) error {
	return store.InTx(ctx, lv.pool, func(tx pgx.Tx) error {
		rest, err := store.MarkFirstPartShown(ctx, tx, inboundID, lv.now())
		if err != nil || !rest {
			return err
		}
		return lv.jobs.enqueueDelivery(ctx, tx, channel, account, store.AnswerKey(inboundID))
	})
}

// renewHolds renews the holds of this replica's running live replies three
// times per worker.run_lease, until ctx ends.
func (lv *liveReplies) renewHolds(ctx context.Context) {
	term := lv.cfg.Worker.RunLease
	for sleep(ctx, term/3) {
		lv.mu.Lock()
		keys := make([]string, 0, len(lv.keys))
		for k := range lv.keys {
			keys = append(keys, k)
		}
		lv.mu.Unlock()
		if len(keys) == 0 {
			continue
		}
		if err := store.RenewHolds(ctx, lv.pool, keys, lv.now().Add(term)); err != nil && ctx.Err() == nil {
			lv.log.Warn("live-reply holds not renewed; answers may go out as messages meanwhile", "live_replies", len(keys), "err", fmt.Errorf("gateway: %w", err))
		}
	}
}
