package ratelimit_test

import (
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/ratelimit"
)

// TestPerKey: a key spends a minute's worth at once, is then told how long
// until the next request, refills at its rate up to a minute's worth, and
// keys do not share buckets.
func TestPerKey(t *testing.T) {
	var l ratelimit.PerKey
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range 2 {
		if _, ok := l.Take("a", 2, now); !ok {
			t.Fatalf("request %d of a rate of 2 refused", i)
		}
	}
	if wait, ok := l.Take("a", 2, now); ok || wait != 30*time.Second {
		t.Fatalf("third request: wait %v ok %v, want refused for 30s", wait, ok)
	}
	if _, ok := l.Take("b", 2, now); !ok {
		t.Fatal("another key was refused")
	}
	if wait, ok := l.Take("a", 2, now.Add(20*time.Second)); ok || wait != 10*time.Second {
		t.Fatalf("after 20s: wait %v ok %v, want refused for 10s", wait, ok)
	}
	if _, ok := l.Take("a", 2, now.Add(30*time.Second)); !ok {
		t.Fatal("refused after the refill")
	}
	// An hour idle refills a minute's worth, no more.
	later := now.Add(time.Hour)
	for i := range 2 {
		if _, ok := l.Take("a", 2, later); !ok {
			t.Fatalf("request %d after an hour refused", i)
		}
	}
	if _, ok := l.Take("a", 2, later); ok {
		t.Fatal("more than a minute's worth after an hour")
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, tc := range []struct {
		wait time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {30 * time.Second, 30}} {
		if got := ratelimit.RetryAfterSeconds(tc.wait); got != tc.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tc.wait, got, tc.want)
		}
	}
}
