package console

import (
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/store"
)

// TestBackoffCurve: no delay before the free failures, then doubling from
// base, and never past the cap, however many failures (no overflow).
func TestBackoffCurve(t *testing.T) {
	b := loginBackoff[store.LoginScopeAccount]
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{0, 0}, {b.free - 1, 0}, {b.free, time.Second}, {b.free + 1, 2 * time.Second}, {b.free + 5, 32 * time.Second},
		{b.free + 6, time.Minute}, {b.free + 63, time.Minute}, {1 << 30, time.Minute},
	} {
		if got := b.delay(tc.failures); got != tc.want {
			t.Errorf("account delay after %d failures: %s, want %s", tc.failures, got, tc.want)
		}
	}
	if got := loginBackoff[store.LoginScopePair].delay(1000); got != 15*time.Minute {
		t.Errorf("pair cap: %s", got)
	}
}
