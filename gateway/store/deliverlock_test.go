package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// The delivery lock's last holder records its last delivery in the
// transaction that releases the lock (Lock.UnlockDelivered), and an
// advisory lock is free before that transaction commits. The next holder's
// read must wait for that record and not see the part as undelivered,
// which would send it twice.
func TestNextDeliveryWaitsForTheLastOnesRecord(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := store.InsertOutbox(ctx, pool, store.Reply{Key: "inbound:1", Channel: "test", Account: "a",
		OrderKey: "test/a/c", Format: channels.FormatText, Parts: []string{"答"}}); err != nil {
		t.Fatal(err)
	}
	// The last holder's record, not committed yet: its lock is already free.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `UPDATE outbox SET delivered_at = now() WHERE reply_key = 'inbound:1'`); err != nil {
		t.Fatal(err)
	}
	type read struct {
		parts []store.OutboxPart
		err   error
	}
	got := make(chan read, 1)
	go func() {
		lock, parts, ok, err := store.TryLockUndelivered(ctx, pool, "inbound:1", "test/a/c")
		if ok {
			lock.Unlock(ctx)
		}
		got <- read{parts, err}
	}()
	// The read either returns at once (it did not wait: the failure) or
	// waits on the record's row lock, which pg_stat_activity shows.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for waiting := false; !waiting; {
		select {
		case r := <-got:
			t.Fatalf("the next delivery read %d undelivered parts (%v) without waiting for the last one's record", len(r.parts), r.err)
		case <-tick.C:
			if err := pool.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM outbox o%'`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || len(r.parts) != 0 {
		t.Fatalf("after the record: %d parts, %v; want none to send", len(r.parts), r.err)
	}
}

// UnlockDelivered releases the delivery lock only once its record of the
// delivery is written: while that write waits (here for a row lock), the
// conversation's lock is still held, so the next holder cannot read the
// part before the record exists.
func TestUnlockDeliveredReleasesAfterItsRecord(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := store.InsertOutbox(ctx, pool, store.Reply{Key: "inbound:1", Channel: "test", Account: "a",
		OrderKey: "test/a/c", Format: channels.FormatText, Parts: []string{"答"}}); err != nil {
		t.Fatal(err)
	}
	lock, parts, ok, err := store.TryLockUndelivered(ctx, pool, "inbound:1", "test/a/c")
	if err != nil || !ok || len(parts) != 1 {
		t.Fatalf("TryLockUndelivered = %d parts, %v, %v", len(parts), ok, err)
	}
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx) //nolint:errcheck
	if _, err := blocker.Exec(ctx, `SELECT 1 FROM outbox WHERE id = $1 FOR UPDATE`, parts[0].ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- lock.UnlockDelivered(ctx, parts[0].ID, "msg-1", time.Now()) }()
	storetest.WaitForLockWait(t, ctx, pool, "UPDATE outbox")
	var held int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&held); err != nil || held != 1 {
		t.Fatalf("%d delivery locks held while the record waits (%v), want 1: the lock was free before the record", held, err)
	}
	if err := blocker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	next, left, ok, err := store.TryLockUndelivered(ctx, pool, "inbound:1", "test/a/c")
	if err != nil || !ok || len(left) != 0 {
		t.Fatalf("after the record: %d parts, %v, %v; want the lock and none to send", len(left), ok, err)
	}
	next.Unlock(ctx)
}
