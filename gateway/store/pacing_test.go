package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

var paceT0 = time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

func claim(t *testing.T, pool *pgxpool.Pool, limits []store.PaceLimit, at time.Time) (store.PaceClaim, time.Time) {
	t.Helper()
	c, retryAt, err := store.ClaimSend(context.Background(), pool, limits, at)
	if err != nil {
		t.Fatal(err)
	}
	return c, retryAt
}

// The window slides: a fourth send within a minute of the first of three
// waits until that first one has left the window, to the microsecond,
// however the three were spread.
func TestClaimSendSlidingWindow(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	chat := []store.PaceLimit{{Key: "chat:a", Max: 3, Window: time.Minute}}
	for _, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		if _, retryAt := claim(t, pool, chat, paceT0.Add(at)); !retryAt.IsZero() {
			t.Fatalf("send at +%s refused until %s", at, retryAt)
		}
	}
	_, retryAt := claim(t, pool, chat, paceT0.Add(30*time.Second))
	if want := paceT0.Add(time.Minute + time.Microsecond); !retryAt.Equal(want) {
		t.Fatalf("fourth send: retry at %s, want %s", retryAt, want)
	}
	// At exactly a minute the first send is still in a closed window.
	if _, retryAt := claim(t, pool, chat, paceT0.Add(time.Minute)); retryAt.IsZero() {
		t.Fatal("a fourth send within a closed minute of the first was allowed")
	}
	if _, retryAt := claim(t, pool, chat, paceT0.Add(time.Minute+time.Microsecond)); !retryAt.IsZero() {
		t.Fatalf("send after the first left the window refused until %s", retryAt)
	}
	// The next slot is when the send at +10s leaves.
	_, retryAt = claim(t, pool, chat, paceT0.Add(61*time.Second))
	if want := paceT0.Add(70*time.Second + time.Microsecond); !retryAt.Equal(want) {
		t.Fatalf("retry at %s, want %s", retryAt, want)
	}
}

// A send must fit every limit; when one is full none counts the send.
func TestClaimSendAllOrNothing(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	account := store.PaceLimit{Key: "account:x", Max: 2, Window: time.Minute}
	chatA := store.PaceLimit{Key: "chat:x/a", Max: 5, Window: time.Minute}
	chatB := store.PaceLimit{Key: "chat:x/b", Max: 5, Window: time.Minute}
	claim(t, pool, []store.PaceLimit{account, chatA}, paceT0)
	claim(t, pool, []store.PaceLimit{account, chatA}, paceT0.Add(time.Second))
	_, retryAt := claim(t, pool, []store.PaceLimit{account, chatB}, paceT0.Add(2*time.Second))
	if want := paceT0.Add(time.Minute + time.Microsecond); !retryAt.Equal(want) {
		t.Fatalf("third send of the account: retry at %s, want %s", retryAt, want)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pace_sends WHERE key = 'chat:x/b'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused send counted against its chat: %d rows, %v", n, err)
	}
	// Both full: the later of the two frees it.
	chatC := store.PaceLimit{Key: "chat:x/c", Max: 1, Window: 2 * time.Minute}
	claim(t, pool, []store.PaceLimit{chatC}, paceT0.Add(30*time.Second))
	_, retryAt = claim(t, pool, []store.PaceLimit{account, chatC}, paceT0.Add(40*time.Second))
	if want := paceT0.Add(150*time.Second + time.Microsecond); !retryAt.Equal(want) {
		t.Fatalf("retry at %s, want %s (when the chat frees)", retryAt, want)
	}
}

// Eight replicas (pools of their own) claim 200 sends of one account at
// the same instant: exactly the limit is granted.
func TestClaimSendAtomicAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t)
	limits := []store.PaceLimit{{Key: "account:busy", Max: 20, Window: time.Minute}}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		pool, err := store.Open(context.Background(), url, 4)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 8 {
					_, retryAt, err := store.ClaimSend(context.Background(), pool, limits, paceT0)
					if err != nil {
						t.Error(err)
						return
					}
					if retryAt.IsZero() {
						granted.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	if n := granted.Load(); n != 20 {
		t.Fatalf("%d of 192 simultaneous sends granted, want the limit 20", n)
	}
}

// A released claim does not count; a sweep deletes what no window reaches.
func TestReleaseAndSweepSends(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	chat := []store.PaceLimit{{Key: "chat:r", Max: 1, Window: time.Minute}}
	c, _ := claim(t, pool, chat, paceT0)
	if err := store.ReleaseSend(ctx, pool, c); err != nil {
		t.Fatal(err)
	}
	if _, retryAt := claim(t, pool, chat, paceT0.Add(time.Second)); !retryAt.IsZero() {
		t.Fatalf("a released send still counted: retry at %s", retryAt)
	}
	claim(t, pool, []store.PaceLimit{{Key: "chat:s", Max: 1, Window: time.Minute}}, paceT0.Add(2*time.Minute))
	n, err := store.SweepSends(ctx, pool, paceT0.Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v; want the one old send", n, err)
	}
	if _, _, err := store.ClaimSend(ctx, pool, []store.PaceLimit{{Key: "k", Max: 0, Window: time.Minute}}, paceT0); err == nil {
		t.Fatal("a limit of 0 was accepted")
	}
}

// BenchmarkClaimSend is the cost pacing adds to every delivery: one claim
// of a chat and an account limit, on one connection as the delivery holds
// it, against windows of a few hundred sends. "insert" is a bare
// one-row insert transaction on the same connection, for scale.
func BenchmarkClaimSend(b *testing.B) {
	pool := storetest.NewPool(b)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	at := paceT0
	i := 0
	b.Run("claim", func(b *testing.B) {
		for b.Loop() {
			limits := []store.PaceLimit{
				{Key: "account:bench", Max: 1000, Window: time.Minute},
				{Key: "chat:bench/" + string(rune('a'+i%20)), Max: 1000, Window: time.Minute},
			}
			at = at.Add(100 * time.Millisecond) // 600 a minute: the windows stay below the limits
			if _, retryAt, err := store.ClaimSend(ctx, conn, limits, at); err != nil || !retryAt.IsZero() {
				b.Fatalf("claim %d: retry at %s, %v", i, retryAt, err)
			}
			i++
		}
	})
	b.Run("insert", func(b *testing.B) {
		for b.Loop() {
			at = at.Add(100 * time.Millisecond)
			err := store.InTx(ctx, conn, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO pace_sends (key, sent_at) VALUES ('other', $1)`, at)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// ClaimUnits takes n units at once or none: 3 and 2 of a limit of 5 fit,
// one more does not until the first 3 leave the window; a part of a claim
// given back frees its units.
func TestClaimUnits(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	l := store.PaceLimit{Key: "intake:u", Max: 5, Window: time.Minute}
	units := func(n int, at time.Duration) (store.PaceClaim, time.Time) {
		t.Helper()
		c, retryAt, err := store.ClaimUnits(ctx, pool, l, n, paceT0.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		return c, retryAt
	}
	if _, retryAt := units(3, 0); !retryAt.IsZero() {
		t.Fatalf("3 of 5 refused until %s", retryAt)
	}
	second, retryAt := units(2, 10*time.Second)
	if !retryAt.IsZero() {
		t.Fatalf("2 more of 5 refused until %s", retryAt)
	}
	if _, retryAt := units(1, 20*time.Second); !retryAt.Equal(paceT0.Add(time.Minute + time.Microsecond)) {
		t.Fatalf("a sixth unit: retry at %s, want when the first 3 leave", retryAt)
	}
	// Of the two at +10s only one was used.
	if err := store.ReleaseSend(ctx, pool, second.After(1)); err != nil {
		t.Fatal(err)
	}
	if _, retryAt := units(1, 20*time.Second); !retryAt.IsZero() {
		t.Fatalf("the unit given back is still counted: retry at %s", retryAt)
	}
	if _, retryAt := units(2, 61*time.Second); !retryAt.IsZero() {
		t.Fatalf("after the first 3 left: refused until %s", retryAt)
	}
	if _, _, err := store.ClaimUnits(ctx, pool, l, 6, paceT0); err == nil {
		t.Fatal("6 units of a limit of 5: no error")
	}
}
