package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// takenOverPause is how long a replica leaves an account alone after the
// platform gave its connection to another client (someone else runs the
// same bot): fighting over it would only disconnect both, over and over.
const takenOverPause = 5 * time.Minute

// connections are the long connections this replica keeps.
type connections struct {
	g      *Gateway
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startConnections runs every channel's long connections: on every replica
// for platforms that spread events over clients, on one replica at a time
// (under a lease) for accounts that allow one connection.
func (cs *connections) startConnections(ctx context.Context) {
	g := cs.g
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.conns.cancel = cancel
	for name, ch := range g.channels {
		sr, ok := ch.(channels.StreamReceiver)
		if !ok {
			continue
		}
		for _, c := range sr.Connections() {
			g.conns.wg.Add(1)
			go func() {
				defer g.conns.wg.Done()
				if c.Exclusive {
					g.conns.holdExclusive(ctx, name, c)
				} else {
					g.conns.keepConnection(ctx, name, c)
				}
			}()
		}
	}
}

// stopConnections closes the connections and waits for them (until ctx
// ends). Leases are released, so another replica takes over at once.
func (cs *connections) stopConnections(ctx context.Context) {
	g := cs.g
	if g.conns.cancel == nil {
		return
	}
	g.conns.cancel()
	done := make(chan struct{})
	go func() { g.conns.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// keepConnection runs a connection every replica keeps, through the one
// reconnect loop; when the platform gives the account to another client
// it stands back for takenOverPause, then tries again.
func (cs *connections) keepConnection(ctx context.Context, channel string, c channels.Connection) {
	g := cs.g
	for ctx.Err() == nil {
		if err := g.conns.reconnect(ctx, channel, c); err != nil {
			g.conns.standBack(ctx, channel, c, err)
		}
	}
}

// standBack leaves an account alone for takenOverPause after the platform
// gave its connection to another client (err wraps channels.ErrTakenOver).
func (cs *connections) standBack(ctx context.Context, channel string, c channels.Connection, err error) {
	g := cs.g
	g.connStates.Set(channel, c.Account, ops.ConnStandby)
	g.log.Error("the platform gave this account's connection to another client; leaving it alone",
		"channel", channel, "account", c.Account, "for", takenOverPause, "err", err)
	sleep(ctx, takenOverPause)
}

// holdExclusive keeps trying to take the account's lease; while it holds
// it, it runs the connection and works the account's delivery queue.
func (cs *connections) holdExclusive(ctx context.Context, channel string, c channels.Connection) {
	g := cs.g
	lease := "connection:" + channel + "/" + c.Account
	retry := g.cfg.Worker.ConnectionLease / 4
	for ctx.Err() == nil {
		g.connStates.Set(channel, c.Account, ops.ConnStandby)
		ok, err := store.AcquireLease(ctx, g.pool, lease, g.replicaID, g.now(), g.cfg.Worker.ConnectionLease)
		if err != nil && ctx.Err() == nil {
			g.log.Warn("connection lease unavailable", "lease", lease, "err", err)
		}
		if ok {
			g.log.Info("holding the long connection", "channel", channel, "account", c.Account, "replica", g.replicaID)
			g.connStates.Set(channel, c.Account, ops.ConnHolding)
			err := g.conns.runHeld(ctx, lease, channel, c)
			if errors.Is(err, channels.ErrTakenOver) {
				g.conns.standBack(ctx, channel, c, err)
			} else if err != nil && ctx.Err() == nil {
				g.log.Warn("long connection ended", "channel", channel, "account", c.Account, "err", err)
			}
		}
		sleep(ctx, retry)
	}
}

// runHeld runs a connection while this replica holds its lease: it renews
// the lease, stops when it is lost, and works the account's delivery queue
// meanwhile, so replies produced on any replica go out on this socket.
func (cs *connections) runHeld(ctx context.Context, lease, channel string, c channels.Connection) (err error) {
	g := cs.g
	queue := g.jobs.exclusive[channel+"/"+c.Account]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		cancel() // renewLease stops before the lease is kept or released
		if errors.Is(err, channels.ErrTakenOver) {
			// Stand back on every replica, not just this one: keep the
			// lease, unrenewed, for the pause, so no other replica
			// subscribes against the client that took the account (a crash
			// of this one changes nothing: the lease lapses at the same time).
			if _, lerr := store.AcquireLease(context.WithoutCancel(ctx), g.pool, lease, g.replicaID, g.now(), takenOverPause); lerr == nil {
				return
			}
		}
		if err := store.ReleaseLease(context.WithoutCancel(ctx), g.pool, lease, g.replicaID); err != nil {
			g.log.Warn("cannot release the connection lease; it expires by itself", "lease", lease, "err", err)
		}
	}()
	deliveries, err := g.conns.newDeliveryClient(queue)
	if err != nil {
		return err
	}
	if err := deliveries.Start(ctx); err != nil {
		return fmt.Errorf("gateway: deliveries of %s: %w", queue, err)
	}
	defer func() {
		stopCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), JobSlack)
		defer stop()
		_ = deliveries.Stop(stopCtx)
	}()
	go g.conns.renewLease(ctx, cancel, lease)
	return g.conns.reconnect(ctx, channel, c)
}

// reconnect keeps c up with channels.Reconnect, the one reconnect loop,
// until ctx ends (nil) or the platform gives the account to another client
// (an error wrapping channels.ErrTakenOver). A panic in a session costs
// that session only: it is counted, and the loop dials again.
func (cs *connections) reconnect(ctx context.Context, channel string, c channels.Connection) error {
	g := cs.g
	state := ops.ConnRunning
	if c.Exclusive {
		state = ops.ConnHolding
	}
	return channels.Reconnect(ctx, c, g, channels.Watch{
		Log:      g.log.With("channel", channel),
		Panicked: func() { g.metrics.Panicked(channel, c.Account) },
		Up: func(up bool) {
			if up {
				g.connStates.Set(channel, c.Account, state)
			} else {
				g.connStates.Set(channel, c.Account, ops.ConnRetrying)
			}
		},
	})
}

// renewLease renews the lease three times per term; when it cannot (lost
// to another replica, or Postgres unreachable for the term) it cancels.
func (cs *connections) renewLease(ctx context.Context, lost context.CancelFunc, lease string) {
	g := cs.g
	term := g.cfg.Worker.ConnectionLease
	lastOK := g.now()
	for sleep(ctx, term/3) {
		ok, err := store.AcquireLease(ctx, g.pool, lease, g.replicaID, g.now(), term)
		switch {
		case err == nil && ok:
			lastOK = g.now()
			continue
		case err == nil:
			g.log.Warn("connection lease taken by another replica; closing the connection", "lease", lease)
		case g.now().Sub(lastOK) < term:
			continue // a blip; the lease still runs
		default:
			g.log.Warn("connection lease not renewed in time; closing the connection", "lease", lease, "err", err)
		}
		lost()
		return
	}
}

// heldDeliveryPoll is how often the job client of a held connection's
// deliveries looks for new ones: it polls instead of listening, because a
// listener is a connection taken out of the pool for good, beyond
// database.max_conns (store.ReservedConns counts only the main client's listener).
// A reply waits at most this long for its turn; a poll is one indexed query.
const heldDeliveryPoll = 100 * time.Millisecond

// newDeliveryClient is a job client that works only queue: the deliveries
// of an account whose connection this replica holds.
func (cs *connections) newDeliveryClient(queue string) (*river.Client[pgx.Tx], error) {
	g := cs.g
	workers := river.NewWorkers()
	river.AddWorker(workers, &deliverWorker{d: &g.delivery, live: &g.live})
	client, err := river.NewClient(riverpgxv5.New(g.pool), &river.Config{
		PollOnly:             true,
		FetchPollInterval:    heldDeliveryPoll,
		FetchCooldown:        fetchCooldown,
		Queues:               map[string]river.QueueConfig{queue: {MaxWorkers: g.cfg.Worker.DeliveryConcurrency}},
		Workers:              workers,
		Logger:               g.log,
		JobTimeout:           g.cfg.Agent.RunTimeout + JobSlack,
		RescueStuckJobsAfter: g.cfg.Worker.RescueAfter,
		MaxAttempts:          g.cfg.Worker.MaxAttempts,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: deliveries of %s: %w", queue, err)
	}
	return client, nil
}

// sleep is skills.Sleep as the gateway's loops ask it: whether ctx is
// still live after the wait.
func sleep(ctx context.Context, d time.Duration) bool { return skills.Sleep(ctx, d) == nil }
