package groupcommit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/groupcommit"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// item is a row to insert; a poisoned one makes its statement fail.
type item struct {
	name   string
	poison bool
}

// table is a database with one table, and a write that records each
// transaction's batch.
type table struct {
	mu      sync.Mutex
	batches [][]string
	gate    chan struct{} // when set, the first write waits for it
}

func (tb *table) write(ctx context.Context, tx pgx.Tx, items []*item) error {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.name
	}
	tb.mu.Lock()
	gate := tb.gate
	tb.gate = nil
	tb.batches = append(tb.batches, names)
	tb.mu.Unlock()
	if gate != nil {
		<-gate
	}
	for _, it := range items {
		value := any(it.name)
		if it.poison {
			value = "not a number"
		}
		if _, err := tx.Exec(ctx, `INSERT INTO rows (name, n) VALUES ($1, $2::text::int)`, it.name, value); err != nil && it.poison {
			return fmt.Errorf("insert %s: %w", it.name, err)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// Items handed over while the one writer is busy are written together, in
// one transaction, once it is free; each caller returns after the commit.
func TestWaitingItemsShareATransaction(t *testing.T) {
	t.Parallel()
	pool, tb, c, gate, first := busyWriter(t)
	ctx := context.Background()

	const waiting = 20
	var wg sync.WaitGroup
	errs := make(chan error, waiting)
	for i := range waiting {
		wg.Go(func() { errs <- c.Do(ctx, &item{name: fmt.Sprint(100 + i)}) })
	}
	// The twenty wait to hand their items over; none is written yet.
	waitFor(t, func() bool { return c.Waiting() == waiting })
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rows`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != waiting+1 {
		t.Errorf("%d rows, want %d", rows, waiting+1)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.batches) != 2 || len(tb.batches[1]) != waiting {
		t.Errorf("transactions %v, want the first item alone, then the %d waiting ones in one", tb.batches, waiting)
	}
}

// A batch whose write fails is written again item by item: only the item
// that cannot be written fails, and only its caller hears of it.
func TestFailedBatchFailsOnlyItsOwnItem(t *testing.T) {
	t.Parallel()
	pool, _, c, gate, first := busyWriter(t)
	ctx := context.Background()

	results := make(map[string]chan error)
	for _, it := range []*item{{name: "2"}, {name: "3", poison: true}, {name: "4"}} {
		result := make(chan error, 1)
		results[it.name] = result
		go func() { result <- c.Do(ctx, it) }()
	}
	// All three are waiting at the writer (none can be taken yet).
	waitFor(t, func() bool { return c.Waiting() == 3 })
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"2", "4"} {
		if err := <-results[name]; err != nil {
			t.Errorf("item %s: %v, want it written", name, err)
		}
	}
	if err := <-results["3"]; err == nil {
		t.Error("the poisoned item: no error")
	}
	var names []string
	rows, err := pool.Query(ctx, `SELECT name FROM rows ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != "[1 2 4]" {
		t.Errorf("rows %v, want [1 2 4]", names)
	}
}

// A caller whose context ends stops waiting; a stopped Committer refuses.
func TestDoEndsWithItsContextAndStop(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	gate := make(chan struct{})
	tb := &table{gate: gate}
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE rows (name text PRIMARY KEY, n int)`); err != nil {
		t.Fatal(err)
	}
	c := groupcommit.New(groupcommit.Config{Writers: 1}, pool, tb.write)
	go func() { _ = c.Do(ctx, &item{name: "1"}) }()
	waitFor(t, func() bool { tb.mu.Lock(); defer tb.mu.Unlock(); return len(tb.batches) == 1 })
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Do(short, &item{name: "2"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with an ended context: %v", err)
	}
	close(gate)
	c.Stop()
	if err := c.Do(ctx, &item{name: "3"}); !errors.Is(err, groupcommit.ErrStopped) {
		t.Errorf("Do after Stop: %v, want ErrStopped", err)
	}
}

// busyWriter is a Committer with one writer, busy writing item "1" until
// gate is closed; first receives that item's outcome.
func busyWriter(t *testing.T) (*pgxpool.Pool, *table, *groupcommit.Committer[item], chan struct{}, chan error) {
	t.Helper()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE rows (name text PRIMARY KEY, n int)`); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	tb := &table{gate: gate}
	c := groupcommit.New(groupcommit.Config{Writers: 1, MaxBatch: 64}, pool, tb.write)
	t.Cleanup(c.Stop)
	first := make(chan error, 1)
	go func() { first <- c.Do(ctx, &item{name: "1"}) }()
	waitFor(t, func() bool { tb.mu.Lock(); defer tb.mu.Unlock(); return len(tb.batches) == 1 })
	return pool, tb, c, gate, first
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(time.Millisecond) // polling a condition, not timing anything
	}
}
