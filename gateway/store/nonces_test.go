package store_test

import (
	"context"
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
		err := store.InTx(ctx, pool, func(tx pgx.Tx) (err error) {
			claimed, heldBy, err = store.ClaimNonce(ctx, tx, "dingtalk", "hr-bot", "sign:n1", msgID, expires, at)
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
		claimed, _, err := store.ClaimNonce(ctx, tx, "dingtalk", "it-bot", "sign:n1", "m2", expires, now)
		if err == nil && !claimed {
			t.Error("another account's nonce refused")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Rolled back with its message, a claim leaves nothing behind.
	_ = store.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, _, err := store.ClaimNonce(ctx, tx, "dingtalk", "hr-bot", "sign:n2", "m3", expires, now); err != nil {
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
