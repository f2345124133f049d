package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestLoginLastFailureNeverGoesBack: parallel logins take their time
// before they queue on the counters' locks, so they are counted out of
// time order; a failure counted late with an earlier time must not move
// the counter's last failure back, or the next attempt's delay is measured
// from a failure older than the newest and lets it through early.
func TestLoginLastFailureNeverGoesBack(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	keys := []store.LoginKey{{Scope: store.LoginScopePair, Key: "127.0.0.2 root"}}
	// After 5 failures an attempt waits 2 s since the last one (the
	// console's pair curve, simplified).
	attempt := func(now time.Time) time.Duration {
		t.Helper()
		wait, err := store.BeginLoginAttempt(ctx, pool, keys, now, now.Add(-24*time.Hour), func(c []store.LoginCounter) time.Duration {
			if c[0].Failures < 5 {
				return 0
			}
			return max(0, c[0].LastFailure.Add(2*time.Second).Sub(now))
		})
		if err != nil {
			t.Fatal(err)
		}
		return wait
	}
	for _, at := range []time.Duration{0, 0, 0, 1500 * time.Millisecond, 0} { // the fifth took its time first, counted last
		if wait := attempt(t0.Add(at)); wait != 0 {
			t.Fatalf("free attempt at +%s refused for %s", at, wait)
		}
	}
	if wait := attempt(t0.Add(2 * time.Second)); wait != 1500*time.Millisecond {
		t.Errorf("sixth attempt 0.5 s after the newest failure: wait %s, want 1.5s", wait)
	}
}
