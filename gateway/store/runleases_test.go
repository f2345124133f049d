package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// leaseFixture stores n messages of one user and their session.
func leaseFixture(t *testing.T, pool *pgxpool.Pool, n int) (sessionID int64, ids []int64) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		in := channels.Inbound{Channel: "wecom", Account: "app", MsgID: fmt.Sprint(i), MsgType: "text", ChatID: "u", ChatType: "single",
			Sender: channels.Identity{UserID: "u"}, Text: "hi"}
		id, _, err := store.InsertInbound(ctx, pool, in, store.InboundPending)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	sessionID, err := store.EnsureSession(ctx, pool, store.SessionKey{Channel: "wecom", Account: "app", ChatID: "u", UserID: "u"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return sessionID, ids
}

func TestSessionLease(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	sessionID, ids := leaseFixture(t, pool, 2)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	lease := func(run string) store.SessionLease {
		return store.SessionLease{SessionID: sessionID, InboundID: ids[0], Holder: "replica-" + run, RunID: run}
	}
	claim := func(run string, now time.Time) bool {
		t.Helper()
		ok, err := store.ClaimSessionLease(ctx, pool, lease(run), now, now.Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	t.Run("OneHolderAtATime", func(t *testing.T) {
		if !claim("a", t0) {
			t.Fatal("first claim refused")
		}
		if claim("b", t0.Add(9*time.Second)) {
			t.Fatal("a live lease was taken")
		}
	})
	t.Run("RenewKeepsItLive", func(t *testing.T) {
		renewed, err := store.RenewSessionLeases(ctx, pool, "replica-a", []string{"a", "gone"}, t0.Add(20*time.Second))
		if err != nil || len(renewed) != 1 || renewed[0] != "a" {
			t.Fatalf("renewed %v (%v), want [a]", renewed, err)
		}
		if claim("b", t0.Add(15*time.Second)) {
			t.Fatal("a renewed lease was taken")
		}
	})
	t.Run("LapsedIsTakenOverAndFencesTheOldRun", func(t *testing.T) {
		if !claim("b", t0.Add(21*time.Second)) {
			t.Fatal("a lapsed lease was not taken over")
		}
		if renewed, _ := store.RenewSessionLeases(ctx, pool, "replica-a", []string{"a"}, t0.Add(30*time.Second)); len(renewed) != 0 {
			t.Fatalf("the old run renewed a lease it lost: %v", renewed)
		}
		if ok, err := store.EndSessionLease(ctx, pool, sessionID, "a"); err != nil || ok {
			t.Fatalf("the old run ended the new run's lease: %v %v", ok, err)
		}
		if ok, err := store.EndSessionLease(ctx, pool, sessionID, "b"); err != nil || !ok {
			t.Fatalf("the holder could not end its lease: %v %v", ok, err)
		}
	})
	t.Run("OldestPending", func(t *testing.T) {
		id, channel, ok, err := store.OldestPendingInSession(ctx, pool, sessionID)
		if err != nil || !ok || id != ids[0] || channel != "wecom" {
			t.Fatalf("oldest pending = %d %q %v %v, want %d", id, channel, ok, err, ids[0])
		}
		if err := store.SetInboundStatus(ctx, pool, ids[0], store.InboundDone, t0); err != nil {
			t.Fatal(err)
		}
		if id, _, _, _ := store.OldestPendingInSession(ctx, pool, sessionID); id != ids[1] {
			t.Fatalf("oldest pending after the first was answered = %d, want %d", id, ids[1])
		}
	})
}

// Two sweeps at once take each lapsed lease once: the second skips what
// the first has locked.
func TestTakeLapsedLeasesOnce(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	sessionID, ids := leaseFixture(t, pool, 1)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, err := store.ClaimSessionLease(ctx, pool, store.SessionLease{SessionID: sessionID, InboundID: ids[0], Holder: "dead", RunID: "r"},
		t0, t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	sweep := func(now time.Time, fn func(tx pgx.Tx, taken []store.LapsedLease) error) {
		t.Helper()
		err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
			taken, err := store.TakeLapsedLeases(ctx, tx, now, 10)
			if err != nil {
				return err
			}
			return fn(tx, taken)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sweep(t0.Add(5*time.Second), func(_ pgx.Tx, taken []store.LapsedLease) error {
		if len(taken) != 0 {
			t.Fatalf("took a live lease: %+v", taken)
		}
		return nil
	})
	sweep(t0.Add(11*time.Second), func(_ pgx.Tx, taken []store.LapsedLease) error {
		if len(taken) != 1 || taken[0].InboundID != ids[0] || taken[0].Holder != "dead" {
			t.Fatalf("first sweep took %+v, want the dead holder's lease", taken)
		}
		// A second replica sweeps while the first has not committed.
		sweep(t0.Add(11*time.Second), func(_ pgx.Tx, again []store.LapsedLease) error {
			if len(again) != 0 {
				t.Fatalf("second sweep took %+v as well", again)
			}
			return nil
		})
		return nil
	})
}

// TestTryLockFoundTakesOneConnection: the lock's name is looked up on the
// connection that takes the lock (one acquisition from the pool), a name
// another connection holds is refused, and an error of the lookup is
// returned with the connection back in the pool.
func TestTryLockFoundTakesOneConnection(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	find := func(q store.Querier) (string, error) {
		var name string
		err := q.QueryRow(ctx, `SELECT 'deliver:' || $1::text`, "wecom/a/chat").Scan(&name)
		return name, err
	}
	before := pool.Stat().AcquireCount()
	lock, ok, err := store.TryLockFound(ctx, pool, find)
	if err != nil || !ok {
		t.Fatalf("TryLockFound = %v, %v", ok, err)
	}
	if n := pool.Stat().AcquireCount() - before; n != 1 {
		t.Errorf("%d acquisitions for one lock, want 1", n)
	}
	if _, ok, err := store.TryLock(ctx, pool, "deliver:wecom/a/chat"); err != nil || ok {
		t.Errorf("the held name taken again: %v, %v", ok, err)
	}
	lock.Unlock(ctx)
	lookupErr := errors.New("no such reply")
	if _, ok, err := store.TryLockFound(ctx, pool, func(store.Querier) (string, error) { return "", lookupErr }); ok || !errors.Is(err, lookupErr) {
		t.Errorf("a failed lookup: %v, %v", ok, err)
	}
	if n := pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d connections still acquired", n)
	}
}
