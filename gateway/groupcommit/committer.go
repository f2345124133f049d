package groupcommit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/store"
)

// Defaults of Config.
const (
	DefaultMaxBatch = 64
	DefaultWriters  = 4
	// DefaultTimeout bounds one batch's transaction: the platforms give
	// up on a callback after 3-5 s, so a write still running after that
	// only holds a connection.
	DefaultTimeout = 5 * time.Second
)

// ErrStopped is returned by Do once the Committer is stopped.
var ErrStopped = errors.New("groupcommit: stopped")

// Config bounds the batches.
type Config struct {
	// MaxWait is how long a free writer waits for more items after the
	// first. Zero: it takes only those already waiting, so a lone caller
	// waits for nothing, and batches form under load by themselves.
	MaxWait time.Duration
	// MaxBatch is the most items in one transaction (DefaultMaxBatch).
	MaxBatch int
	// Writers is the most batches written at once, each on one
	// connection (DefaultWriters).
	Writers int
	// Timeout bounds one batch's transaction (DefaultTimeout).
	Timeout time.Duration
	// GenericPlans runs the write's statements with their generic plans
	// (store.InGenericTx, whose rule they must follow).
	GenericPlans bool
}

// WriteFunc writes items in tx. It records each item's own outcome in the
// item (a refusal that is not a failure of the batch included), and
// returns an error only for what fails the whole transaction; it may be
// called again with some of the same items after such an error, so it
// sets every outcome afresh.
type WriteFunc[T any] func(ctx context.Context, tx pgx.Tx, items []*T) error

// Committer writes the items of concurrent callers in shared transactions.
type Committer[T any] struct {
	cfg   Config
	db    store.TxBeginner
	write WriteFunc[T]

	queue   chan *entry[T]
	waiting atomic.Int32 // callers handing an item over
	start   sync.Once
	ctx     context.Context
	stop    context.CancelFunc
	done    sync.WaitGroup
}

type entry[T any] struct {
	item   *T
	result chan error // buffered: a writer never waits for its caller
}

// New returns a Committer writing with write on db. Its writers start with
// the first Do and end with Stop.
func New[T any](cfg Config, db store.TxBeginner, write WriteFunc[T]) *Committer[T] {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.Writers <= 0 {
		cfg.Writers = DefaultWriters
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	c := &Committer[T]{cfg: cfg, db: db, write: write, queue: make(chan *entry[T])}
	c.ctx, c.stop = context.WithCancel(context.Background())
	return c
}

// Do writes item in a batch and returns once that batch has committed
// (nil) or failed. ctx bounds only the wait: an item handed over before
// ctx ended may still be committed after Do returned ctx's error, so a
// caller must treat that error as "unknown" (a platform told to retry
// sends the same message again, which the write must recognise).
func (c *Committer[T]) Do(ctx context.Context, item *T) error {
	c.start.Do(c.startWriters)
	e := &entry[T]{item: item, result: make(chan error, 1)}
	c.waiting.Add(1)
	select {
	case c.queue <- e:
		c.waiting.Add(-1)
	case <-ctx.Done():
		c.waiting.Add(-1)
		return ctx.Err()
	case <-c.ctx.Done():
		c.waiting.Add(-1)
		return ErrStopped
	}
	select {
	case err := <-e.result:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Waiting is how many callers wait for a free writer to take their item.
func (c *Committer[T]) Waiting() int { return int(c.waiting.Load()) }

// Stop ends the writers after the batches they are writing; a Do waiting
// to hand its item over returns ErrStopped.
func (c *Committer[T]) Stop() {
	c.stop()
	c.done.Wait()
}

func (c *Committer[T]) startWriters() {
	for range c.cfg.Writers {
		c.done.Go(c.writer)
	}
}

// writer takes the first waiting item, collects the batch and writes it,
// until the Committer stops.
func (c *Committer[T]) writer() {
	batch := make([]*entry[T], 0, c.cfg.MaxBatch)
	for {
		select {
		case <-c.ctx.Done():
			return
		case e := <-c.queue:
			batch = c.collect(append(batch[:0], e))
			c.commit(batch)
		}
	}
}

// collect adds to batch the items waiting now and, within MaxWait of the
// first, those that arrive, up to MaxBatch.
func (c *Committer[T]) collect(batch []*entry[T]) []*entry[T] {
	var deadline <-chan time.Time
	if c.cfg.MaxWait > 0 {
		t := time.NewTimer(c.cfg.MaxWait)
		defer t.Stop()
		deadline = t.C
	}
	for len(batch) < c.cfg.MaxBatch {
		select {
		case e := <-c.queue:
			batch = append(batch, e)
			continue
		default:
		}
		if deadline == nil {
			return batch
		}
		select {
		case e := <-c.queue:
			batch = append(batch, e)
		case <-deadline:
			return batch
		}
	}
	return batch
}

// commit writes batch in one transaction; if that fails, each item alone.
func (c *Committer[T]) commit(batch []*entry[T]) {
	err := c.tx(batch)
	if err == nil || len(batch) == 1 {
		for _, e := range batch {
			e.result <- err
		}
		return
	}
	for _, e := range batch {
		e.result <- c.tx([]*entry[T]{e})
	}
}

// tx writes the items of batch in one transaction. Stop does not cut it:
// the callers are waiting for its outcome.
func (c *Committer[T]) tx(batch []*entry[T]) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	items := make([]*T, len(batch))
	for i, e := range batch {
		items[i] = e.item
	}
	var opts pgx.TxOptions
	if c.cfg.GenericPlans {
		opts = store.GenericPlans
	}
	return store.InTxWith(ctx, c.db, opts, func(tx pgx.Tx) error { return c.write(ctx, tx, items) })
}
