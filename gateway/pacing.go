package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Pacing keeps sends under the platforms' per-minute limits (a channel's
// Limits.PerMinute per chat, AccountPerMinute per account) across every
// replica: each send is claimed in Postgres against a sliding window of
// the sends before it (store.ClaimSend), so no window of a minute ever
// carries more than the limit, however many replicas send. A send that
// finds its window full is not dropped and holds no connection while it
// waits: its delivery snoozes until the window has room.

const (
	// paceMargin widens the minute the limits are counted over: the
	// platform counts sends when they arrive, which is some network time
	// after the claim, and replicas' clocks differ by a little.
	paceMargin = time.Second
	// paceWindow is the window a per-minute limit is counted over.
	paceWindow = time.Minute + paceMargin
	// paceShortWait: a slot this close is waited for on the spot, holding
	// the conversation's connection that long at most; a later slot
	// snoozes the delivery job instead.
	paceShortWait = time.Second
	// paceMinSnooze keeps a job whose slot is (nearly) due from spinning.
	paceMinSnooze = 50 * time.Millisecond
	// paceSweepEvery is how often a replica deletes the sends no window
	// reaches any more.
	paceSweepEvery = time.Minute
)

// pacer is a replica's pacing state: only when it last swept. The windows
// themselves are in Postgres.
type pacer struct {
	now       func() time.Time
	log       *slog.Logger
	nextSweep atomic.Int64 // Unix nanoseconds on the gateway's clock
}

// paceLimits are the limits a part counts against: its chat's and its
// account's, when the channel has them.
func paceLimits(lim channels.Limits, p store.OutboxPart) []store.PaceLimit {
	account := p.Channel + "/" + p.Account
	chat := p.OrderKey // channel/account/chat
	if chat == "" {
		chat = account + "/reply:" + p.ReplyKey // a reply written before order keys
	}
	var out []store.PaceLimit
	if lim.AccountPerMinute > 0 {
		out = append(out, store.PaceLimit{Key: "account:" + account, Max: lim.AccountPerMinute, Window: paceWindow})
	}
	if lim.PerMinute > 0 {
		out = append(out, store.PaceLimit{Key: "chat:" + chat, Max: lim.PerMinute, Window: paceWindow})
	}
	return out
}

// pace claims a send of p under its channel's limits. When the windows are
// full it waits for a slot within paceShortWait, and otherwise returns
// retryAt, the time to come back (the caller snoozes). The claim is
// released with store.ReleaseSend if the send does not happen.
func (pc *pacer) pace(ctx context.Context, conn *pgxpool.Conn, ch channels.Channel, p store.OutboxPart) (claim store.PaceClaim, retryAt time.Time, err error) {
	limits := paceLimits(ch.Limits(p.Account), p)
	if len(limits) == 0 {
		return store.PaceClaim{}, time.Time{}, nil
	}
	claim, retryAt, err = store.ClaimSend(ctx, conn, limits, pc.now())
	if err == nil && !retryAt.IsZero() && retryAt.Sub(pc.now()) <= paceShortWait {
		if !sleep(ctx, retryAt.Sub(pc.now())) {
			return store.PaceClaim{}, time.Time{}, fmt.Errorf("gateway: pacing reply %s: %w", p.ReplyKey, ctx.Err())
		}
		claim, retryAt, err = store.ClaimSend(ctx, conn, limits, pc.now())
	}
	if err != nil {
		return store.PaceClaim{}, time.Time{}, err
	}
	if retryAt.IsZero() {
		pc.sweepPaced(ctx, conn)
	}
	return claim, retryAt, nil
}

// sweepPaced deletes the sends no window reaches any more, at most once
// per paceSweepEvery on this replica. A failure is logged: the next sweep
// catches up, and old rows never count (they are outside every window).
func (pc *pacer) sweepPaced(ctx context.Context, conn *pgxpool.Conn) {
	now := pc.now()
	next := pc.nextSweep.Load()
	if now.UnixNano() < next || !pc.nextSweep.CompareAndSwap(next, now.Add(paceSweepEvery).UnixNano()) {
		return
	}
	if _, err := store.SweepSends(ctx, conn, now.Add(-paceWindow)); err != nil {
		pc.log.Warn("pacing: sweeping old sends failed", "err", err)
	}
}

// paceSnooze is how long a delivery whose next slot is at retryAt snoozes.
// River schedules it on the real clock.
func (pc *pacer) paceSnooze(retryAt time.Time) time.Duration {
	return max(retryAt.Sub(pc.now()), paceMinSnooze)
}
