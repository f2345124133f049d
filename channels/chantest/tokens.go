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
	val     interface{}
	expires time.Time
}

// NewTokenCache returns an empty cache.
func NewTokenCache() *TokenCache { return &TokenCache{m: map[string]tokenEntry{}} }

// Get returns the live value under key, or nil.
func (c *TokenCache) Get(key string) interface{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || time.Now().After(e.expires) {
		return nil
	}
	return e.val
}

// Set stores val for timeout.
func (c *TokenCache) Set(key string, val interface{}, timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = tokenEntry{val: val, expires: time.Now().Add(timeout)}
	return nil
}

// IsExist reports whether a live value exists.
func (c *TokenCache) IsExist(key string) bool { return c.Get(key) != nil }

// Delete removes key.
func (c *TokenCache) Delete(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
	return nil
}

// Token returns the cached token or fetches one (under the cache's lock,
// so once per cache).
func (c *TokenCache) Token(ctx context.Context, key string, fetch func(context.Context) (string, time.Duration, error)) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && time.Now().Before(e.expires) {
		if s, ok := e.val.(string); ok {
			return s, nil
		}
	}
	tok, ttl, err := fetch(ctx)
	if err != nil {
		return "", err
	}
	c.m[key] = tokenEntry{val: tok, expires: time.Now().Add(ttl)}
	return tok, nil
}

// Invalidate drops key's token if it is still stale.
func (c *TokenCache) Invalidate(_ context.Context, key, stale string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && e.val == stale {
		delete(c.m, key)
	}
	return nil
}
