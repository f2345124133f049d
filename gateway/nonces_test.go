package gateway_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store"
)

// TestExpiredNoncesForgotten: the pipeline forgets expired single-use
// nonce claims by itself, with no feature wired (the tool router's
// periodic job used to do it), and keeps the live ones.
func TestExpiredNoncesForgotten(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	now := time.Now()
	err := store.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		_, err := store.ClaimNonces(ctx, tx, []store.NonceClaim{
			{Channel: "dingtalk", Account: "bot", Nonce: "gone", MsgID: "msg-gone", Expires: now.Add(-time.Minute)},
			{Channel: "dingtalk", Account: "bot", Nonce: "live", MsgID: "msg-live", Expires: now.Add(time.Hour)},
		}, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Start(gateway.Deps{Features: []gateway.Feature{}})
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for h.Count(`SELECT count(*) FROM callback_nonces WHERE nonce = 'gone'`) != 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the expired nonce claim was never forgotten")
		case <-tick.C:
		}
	}
	if n := h.Count(`SELECT count(*) FROM callback_nonces WHERE nonce = 'live'`); n != 1 {
		t.Fatalf("live nonce claims = %d, want 1", n)
	}
}
