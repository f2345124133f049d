package chantest

import (
	"context"
	"sync"
	"time"
)

// TokenCache is an in-memory channels.TokenCache for a platform package's
// own tests; the gateway's is Postgres-backed and shared by replicas.
type TokenCache struct {
	mu sync.Mutex
	m  map[string]tokenEntry
}

type tokenEntry struct {
	token   string
	expires time.Time
}

// NewTokenCache returns an empty cache.
func NewTokenCache() *TokenCache { return &TokenCache{m: map[string]tokenEntry{}} }

// Token returns the cached token or fetches one (under the cache's lock,
// so once per cache).
func (c *TokenCache) Token(ctx context.Context, key string, fetch func(context.Context) (string, time.Duration, error)) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && time.Now().Before(e.expires) {
		return e.token, nil
	}
	tok, ttl, err := fetch(ctx)
	if err != nil {
		return "", err
	}
	c.m[key] = tokenEntry{token: tok, expires: time.Now().Add(ttl)}
	return tok, nil
}

// Invalidate drops key's token if it is still stale.
func (c *TokenCache) Invalidate(_ context.Context, key, stale string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && e.token == stale {
		delete(c.m, key)
	}
	return nil
}
