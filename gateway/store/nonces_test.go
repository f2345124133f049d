package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

func TestClaimNonce(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	expires := now.Add(time.Hour)
	claim := func(msgID string, at time.Time) (bool, string) {
		t.Helper()
		var claimed bool
		var heldBy string
		err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
			out, err := store.ClaimNonces(ctx, tx, []store.NonceClaim{{Channel: "dingtalk", Account: "hr-bot", Nonce: "sign:n1", MsgID: msgID, Expires: expires}}, at)
			if err == nil {
				claimed, heldBy = out[0].Claimed, out[0].HeldBy
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return claimed, heldBy
	}
	if claimed, _ := claim("m1", now); !claimed {
		t.Fatal("first claim not taken")
	}
	if claimed, heldBy := claim("m1", now); claimed || heldBy != "m1" {
		t.Errorf("same message again: claimed=%v held by %q, want held by m1", claimed, heldBy)
	}
	if claimed, heldBy := claim("m2", now.Add(59*time.Minute)); claimed || heldBy != "m1" {
		t.Errorf("another message: claimed=%v held by %q, want held by m1", claimed, heldBy)
	}
	// The same nonce in another account is another proof.
	err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
		out, err := store.ClaimNonces(ctx, tx, []store.NonceClaim{{Channel: "dingtalk", Account: "it-bot", Nonce: "sign:n1", MsgID: "m2", Expires: expires}}, now)
		if err == nil && !out[0].Claimed {
			t.Error("another account's nonce refused")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Rolled back with its message, a claim leaves nothing behind.
	_ = store.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := store.ClaimNonces(ctx, tx, []store.NonceClaim{{Channel: "dingtalk", Account: "hr-bot", Nonce: "sign:n2", MsgID: "m3", Expires: expires}}, now); err != nil {
			t.Fatal(err)
		}
		return context.Canceled // roll back
	})
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM callback_nonces WHERE nonce = 'sign:n2'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rolled-back claim: %d rows (%v)", n, err)
	}
	// Once expired (the platform's window is over), the claim is free and
	// forgotten by ForgetNonces.
	if claimed, _ := claim("m9", expires); !claimed {
		t.Error("an expired claim still blocks")
	}
	if gone, err := store.ForgetNonces(ctx, pool, expires.Add(time.Nanosecond)); err != nil || gone != 2 {
		t.Errorf("forgot %d (%v), want 2 (both accounts' claims expire together)", gone, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM callback_nonces`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d claims left (%v)", n, err)
	}
}

// TestClaimNoncesInOneBatch: a batch's claims are decided as if claimed
// one after the other, and two batches claiming the same nonces in
// opposite orders at once do not deadlock.
func TestClaimNoncesInOneBatch(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	live, gone := now.Add(time.Hour), now.Add(-time.Minute)
	claim := func(claims ...store.NonceClaim) []store.NonceOutcome {
		t.Helper()
		var out []store.NonceOutcome
		err := store.InTx(ctx, pool, func(tx pgx.Tx) (err error) {
			out, err = store.ClaimNonces(ctx, tx, claims, now)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	nc := func(nonce, msgID string, expires time.Time) store.NonceClaim {
		return store.NonceClaim{Channel: "wecom", Account: "hr", Nonce: nonce, MsgID: msgID, Expires: expires}
	}
	claim(nc("held", "m0", live), nc("lapsed", "m0", gone))
	got := claim(
		nc("new", "m1", live),
		nc("held", "m0", live),   // the same delivery again
		nc("held", "m2", live),   // a replay of m0's proof
		nc("lapsed", "m3", live), // a claim that expired: free again
		nc("new", "m1", live),    // the first of this batch, delivered twice
		nc("new", "m4", live),    // replaying the first of this batch
		nc("held", "m0", live),   // the same twice in one batch
	)
	want := []store.NonceOutcome{
		{Claimed: true, HeldBy: "m1"},
		{HeldBy: "m0"},
		{HeldBy: "m0"},
		{Claimed: true, HeldBy: "m3"},
		{HeldBy: "m1"},
		{HeldBy: "m1"},
		{HeldBy: "m0"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("claim %d: %+v, want %+v", i, got[i], want[i])
		}
	}

	// A batch takes its rows in key order, so two batches never wait on
	// each other in a cycle. One transaction holds the last of 50 nonces;
	// a batch listing them last first must have taken the other 49 by the
	// time it waits for that one.
	var backward []store.NonceClaim
	for i := range 50 {
		backward = append([]store.NonceClaim{nc(fmt.Sprintf("race-%02d", i), "b", live)}, backward...)
	}
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := store.ClaimNonces(ctx, holder, []store.NonceClaim{nc("race-49", "a", live)}, now); err != nil {
		t.Fatal(err)
	}
	batch := make(chan error, 1)
	go func() {
		batch <- store.InTx(ctx, pool, func(tx pgx.Tx) error {
			out, err := store.ClaimNonces(ctx, tx, backward, now)
			if err == nil && (out[0].Claimed || out[0].HeldBy != "a" || !out[49].Claimed) {
				return fmt.Errorf("race-49 %+v, race-00 %+v: want held by a, claimed", out[0], out[49])
			}
			return err
		})
	}()
	storetest.WaitForLockWait(t, ctx, pool, "INSERT INTO callback_nonces")
	err = store.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '100ms'`); err != nil {
			return err
		}
		_, err := store.ClaimNonces(ctx, tx, []store.NonceClaim{nc("race-00", "c", live)}, now)
		return err
	})
	if err == nil {
		t.Error("race-00 was free while the batch waited for race-49: rows taken in list order, not key order")
	}
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-batch; err != nil {
		t.Fatal(err)
	}
}

// BenchmarkClaimNonces compares claiming a batch's 16 nonces in one
// statement (what a group commit of 16 acks does) with one statement per
// nonce (what it did before), a batch to a transaction.
//
//	go test -run '^$' -bench ClaimNonces ./gateway/store/
func BenchmarkClaimNonces(b *testing.B) {
	pool := storetest.NewPool(b)
	ctx := context.Background()
	now := time.Now()
	seq := 0
	batch := func() []store.NonceClaim {
		claims := make([]store.NonceClaim, 16)
		for i := range claims {
			seq++
			claims[i] = store.NonceClaim{Channel: "wecom", Account: "hr", Nonce: fmt.Sprintf("bench-%d", seq), MsgID: fmt.Sprintf("m%d", seq), Expires: now.Add(time.Hour)}
		}
		return claims
	}
	for _, v := range []struct {
		name string
		each bool
	}{{"OneStatement", false}, {"OnePerNonce", true}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				claims := batch()
				err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
					if !v.each {
						_, err := store.ClaimNonces(ctx, tx, claims, now)
						return err
					}
					for _, c := range claims {
						if _, err := store.ClaimNonces(ctx, tx, []store.NonceClaim{c}, now); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
