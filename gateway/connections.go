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
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
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
	inbox      channels.Sink // where the connections' messages go
	cfg        *config.Config
	pool       *pgxpool.Pool
	channels   map[string]channels.Channel
	jobs       *Jobs
	delivery   *delivery    // an account's held connection works its deliveries here
	live       *liveReplies // which a delivery of a held part waits for
	connStates *ops.ConnStates
	replicaID  string // the holder its connection leases name
	metrics    *ops.Metrics
	now        func() time.Time
	log        *slog.Logger
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

// startConnections runs every channel's long connections: on every replica
// for platforms that spread events over clients, on one replica at a time
// (under a lease) for accounts that allow one connection.
func (cs *connections) startConnections(ctx context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cs.cancel = cancel
	for name, ch := range cs.channels {
		sr, ok := ch.(channels.StreamReceiver)
		if !ok {
			continue
		}
		for _, c := range sr.Connections() {
			cs.wg.Add(1)
			go func() {
				defer cs.wg.Done()
				if c.Exclusive {
					cs.holdExclusive(ctx, name, c)
				} else {
					cs.keepConnection(ctx, name, c)
				}
			}()
		}
	}
}

// stopConnections closes the connections and waits for them (until ctx
// ends). Leases are released, so another replica takes over at once.
func (cs *connections) stopConnections(ctx context.Context) {
	if cs.cancel == nil {
		return
	}
	cs.cancel()
	done := make(chan struct{})
	go func() { cs.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// keepConnection runs a connection every replica keeps, through the one
// reconnect loop; when the platform gives the account to another client
// it stands back for takenOverPause, then tries again.
func (cs *connections) keepConnection(ctx context.Context, channel string, c channels.Connection) {
	for ctx.Err() == nil {
		if err := cs.reconnect(ctx, channel, c); err != nil {
			cs.standBack(ctx, channel, c, err)
		}
	}
}

// standBack leaves an account alone for takenOverPause after the platform
// gave its connection to another client (err wraps channels.ErrTakenOver).
func (cs *connections) standBack(ctx context.Context, channel string, c channels.Connection, err error) {
	cs.connStates.Set(channel, c.Account, ops.ConnStandby)
	cs.log.Error("the platform gave this account's connection to another client; leaving it alone",
		"channel", channel, "account", c.Account, "for", takenOverPause, "err", err)
	sleep(ctx, takenOverPause)
}

// holdExclusive keeps trying to take the account's lease; while it holds
// it, it runs the connection and works the account's delivery queue.
func (cs *connections) holdExclusive(ctx context.Context, channel string, c channels.Connection) {
	lease := "connection:" + channel + "/" + c.Account
	retry := cs.cfg.Worker.ConnectionLease / 4
	for ctx.Err() == nil {
		cs.connStates.Set(channel, c.Account, ops.ConnStandby)
		ok, err := store.AcquireLease(ctx, cs.pool, lease, cs.replicaID, cs.now(), cs.cfg.Worker.ConnectionLease)
		if err != nil && ctx.Err() == nil {
			cs.log.Warn("connection lease unavailable", "lease", lease, "err", err)
		}
		if ok {
			cs.log.Info("holding the long connection", "channel", channel, "account", c.Account, "replica", cs.replicaID)
			cs.connStates.Set(channel, c.Account, ops.ConnHolding)
			err := cs.runHeld(ctx, lease, channel, c)
			if errors.Is(err, channels.ErrTakenOver) {
				cs.standBack(ctx, channel, c, err)
			} else if err != nil && ctx.Err() == nil {
				cs.log.Warn("long connection ended", "channel", channel, "account", c.Account, "err", err)
			}
		}
		sleep(ctx, retry)
	}
}

// runHeld runs a connection while this replica holds its lease: it renews
// the lease, stops when it is lost, and works the account's delivery queue
// meanwhile, so replies produced on any replica go out on this socket.
func (cs *connections) runHeld(ctx context.Context, lease, channel string, c channels.Connection) (err error) {
	queue := cs.jobs.exclusive[channel+"/"+c.Account]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		cancel() // renewLease stops before the lease is kept or released
		if errors.Is(err, channels.ErrTakenOver) {
			// Stand back on every replica, not just this one: keep the
			// lease, unrenewed, for the pause, so no other replica
			// subscribes against the client that took the account (a crash
			// of this one changes nothing: the lease lapses at the same time).
			if _, lerr := store.AcquireLease(context.WithoutCancel(ctx), cs.pool, lease, cs.replicaID, cs.now(), takenOverPause); lerr == nil {
				return
			}
		}
		if err := store.ReleaseLease(context.WithoutCancel(ctx), cs.pool, lease, cs.replicaID); err != nil {
			cs.log.Warn("cannot release the connection lease; it expires by itself", "lease", lease, "err", err)
		}
	}()
	deliveries, err := cs.newDeliveryClient(queue)
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
	go cs.renewLease(ctx, cancel, lease)
	return cs.reconnect(ctx, channel, c)
}

// reconnect keeps c up with channels.Reconnect, the one reconnect loop,
// until ctx ends (nil) or the platform gives the account to another client
// (an error wrapping channels.ErrTakenOver). A panic in a session costs
// that session only: it is counted, and the loop dials again.
func (cs *connections) reconnect(ctx context.Context, channel string, c channels.Connection) error {
	state := ops.ConnRunning
	if c.Exclusive {
		state = ops.ConnHolding
	}
	return channels.Reconnect(ctx, c, cs.inbox, channels.Watch{
		Log:      cs.log.With("channel", channel),
		Panicked: func() { cs.metrics.Panicked(channel, c.Account) },
		Up: func(up bool) {
			if up {
				cs.connStates.Set(channel, c.Account, state)
			} else {
				cs.connStates.Set(channel, c.Account, ops.ConnRetrying)
			}
		},
	})
}

// renewLease renews the lease three times per term; when it cannot (lost
// to another replica, or Postgres unreachable for the term) it cancels.
func (cs *connections) renewLease(ctx context.Context, lost context.CancelFunc, lease string) {
	term := cs.cfg.Worker.ConnectionLease
	lastOK := cs.now()
	for sleep(ctx, term/3) {
		ok, err := store.AcquireLease(ctx, cs.pool, lease, cs.replicaID, cs.now(), term)
		switch {
		case err == nil && ok:
			lastOK = cs.now()
			continue
		case err == nil:
			cs.log.Warn("connection lease taken by another replica; closing the connection", "lease", lease)
		case cs.now().Sub(lastOK) < term:
			continue // a blip; the lease still runs
		default:
			cs.log.Warn("connection lease not renewed in time; closing the connection", "lease", lease, "err", err)
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
	workers := river.NewWorkers()
	river.AddWorker(workers, &deliverWorker{d: cs.delivery, live: cs.live})
	client, err := river.NewClient(riverpgxv5.New(cs.pool), &river.Config{
		PollOnly:             true,
		FetchPollInterval:    heldDeliveryPoll,
		FetchCooldown:        fetchCooldown,
		Queues:               map[string]river.QueueConfig{queue: {MaxWorkers: cs.cfg.Worker.DeliveryConcurrency}},
		Workers:              workers,
		Logger:               cs.log,
		JobTimeout:           cs.cfg.Agent.RunTimeout + JobSlack,
		RescueStuckJobsAfter: cs.cfg.Worker.RescueAfter,
		MaxAttempts:          cs.cfg.Worker.MaxAttempts,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: deliveries of %s: %w", queue, err)
	}
	return client, nil
}

// sleep is skills.Sleep as the gateway's loops ask it: whether ctx is
// still live after the wait.
func sleep(ctx context.Context, d time.Duration) bool { return skills.Sleep(ctx, d) == nil }
