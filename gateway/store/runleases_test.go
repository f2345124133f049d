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
		refs := []store.LeaseRef{{SessionID: sessionID, RunID: "a"}, {SessionID: sessionID, RunID: "gone"}}
		renewed, err := store.RenewSessionLeases(ctx, pool, "replica-a", refs, t0.Add(20*time.Second))
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
		refs := []store.LeaseRef{{SessionID: sessionID, RunID: "a"}}
		if renewed, _ := store.RenewSessionLeases(ctx, pool, "replica-a", refs, t0.Add(30*time.Second)); len(renewed) != 0 {
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

// A lease ends when its message is answered, with no write to the
// session: the next run takes it at once, and the sweep does not take it
// for a lapsed one. Marking the session active without a lease (a
// session looked up for a card, a command) leaves a lapsed lease for the
// sweep.
func TestSessionLeaseEndsWithItsAnswer(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	sessionID, ids := leaseFixture(t, pool, 2)
	key := store.SessionKey{Channel: "wecom", Account: "app", ChatID: "u", UserID: "u"}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	claim := func(run string, inbound int64, now time.Time) bool {
		t.Helper()
		ok, err := store.ClaimSessionLease(ctx, pool, store.SessionLease{SessionID: sessionID, InboundID: inbound, Holder: "r", RunID: run},
			now, now.Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	taken := func(now time.Time) []store.LapsedLease {
		t.Helper()
		var got []store.LapsedLease
		err := store.InTx(ctx, pool, func(tx pgx.Tx) (err error) {
			got, err = store.TakeLapsedLeases(ctx, tx, now, 10)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if !claim("a", ids[0], t0) {
		t.Fatal("first claim refused")
	}
	if _, err := store.EnsureSession(ctx, pool, key, t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := taken(t0.Add(20 * time.Second)); len(got) != 1 || got[0].InboundID != ids[0] {
		t.Fatalf("sweep of a lapsed lease after the session was marked active took %+v", got)
	}
	if !claim("b", ids[0], t0.Add(30*time.Second)) {
		t.Fatal("claim after the sweep refused")
	}
	if err := store.SetInboundStatus(ctx, pool, ids[0], store.InboundDone, t0.Add(31*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := taken(t0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("sweep took a lease its run ended by answering: %+v", got)
	}
	if !claim("c", ids[1], t0.Add(32*time.Second)) {
		t.Fatal("a lease whose message was answered still held the session")
	}
}

// A claim that waits for the session's row while the holder commits its
// answer gets the lease once that commit lands; it is not sent away as
// busy (nobody would then answer its message: the holder looked for the
// next message before the claim's message was stored).
func TestClaimWaitingOnAnAnswerGetsTheLease(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sessionID, ids := leaseFixture(t, pool, 2)
	t0 := time.Now()
	if ok, err := store.ClaimSessionLease(ctx, pool, store.SessionLease{SessionID: sessionID, InboundID: ids[0], Holder: "r", RunID: "a"},
		t0, t0.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if held, err := store.HoldSessionLease(ctx, tx, sessionID, "a"); err != nil || !held {
		t.Fatalf("HoldSessionLease = %v, %v", held, err)
	}
	if err := store.SetInboundStatus(ctx, tx, ids[0], store.InboundDone, t0); err != nil {
		t.Fatal(err)
	}
	type result struct {
		c   store.InboundClaim
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := store.ClaimInbound(ctx, pool, ids[1], "r", "b", t0, t0.Add(time.Minute), store.HistoryQuery{})
		done <- result{c, err}
	}()
	storetest.WaitForLockWait(t, ctx, pool, "INSERT INTO sessions")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.c.Busy || !r.c.Answer {
		t.Fatalf("claim after the answer's commit: %+v, %v; want the lease and an answer", r.c, r.err)
	}
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
