package ratelimit

import (
	"math"
	"sync"
	"time"
)

// PerKey is a token bucket per API key on this replica: a key may spend a
// minute's worth of requests at once, then one per 1/ratePerMinute
// minutes. The zero value is ready to use; it is safe for concurrent use.
type PerKey struct {
	mu      sync.Mutex
	buckets map[string]*bucket // by API key
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// Take spends one request of key at now, ratePerMinute (> 0) being the
// key's rate. When none is left it reports how long until one is.
func (l *PerKey) Take(key string, ratePerMinute int, now time.Time) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	capacity, perSecond := float64(ratePerMinute), float64(ratePerMinute)/60
	b, found := l.buckets[key]
	if !found {
		b = &bucket{tokens: capacity, at: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens = min(capacity, b.tokens+elapsed*perSecond)
		b.at = now
	}
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) / perSecond * float64(time.Second)), false
	}
	b.tokens--
	return 0, true
}

// RetryAfterSeconds is wait as a Retry-After value: whole seconds, rounded
// up so that a client waiting that long is admitted, at least 1.
func RetryAfterSeconds(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
