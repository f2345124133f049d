package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Token returns the live token cached under key, or fetches one: once
// across all replicas, under a Postgres advisory lock, re-reading the cache
// once the lock is held (another replica may have just fetched it). ttl is
// how long the platform says the token lives; it is cached for a little
// less, so it is renewed before it expires.
func (c *TokenCache) Token(ctx context.Context, key string, fetch func(ctx context.Context) (token string, ttl time.Duration, err error)) (string, error) {
	if v, ok := c.memGet(key, c.now()); ok {
		return v, nil
	}
	// One miss at a time in this replica: a burst of sends finding no
	// token (the first ones after a start) waits for the first to read or
	// fetch it, instead of each taking pool connections for it.
	miss := c.missLock(key)
	miss.Lock()
	defer miss.Unlock()
	if v, ok := c.get(ctx, key); ok {
		return v, nil
	}
	lock, err := lockWait(ctx, c, "token:"+key)
	if err != nil {
		return "", err
	}
	defer lock.Unlock(ctx)
	if v, ok := c.get(ctx, key); ok {
		return v, nil
	}
	token, ttl, err := fetch(ctx)
	if err != nil {
		return "", err
	}
	if err := c.set(ctx, key, token, renewBefore(ttl)); err != nil {
		// The token is good: this replica keeps it and sends with it; the
		// others fetch their own until a write succeeds.
		slog.Warn("token cache write failed; the token is kept in this replica's memory", "key", key, "err", err)
		c.memSet(key, token, c.now().Add(renewBefore(ttl)))
	}
	return token, nil
}

// Invalidate drops key's token if it is still stale, the token a platform
// just refused as expired: of several replicas refused at once, the first
// drops it and the others find the fresh token that replaced it, so it is
// fetched once.
func (c *TokenCache) Invalidate(ctx context.Context, key, stale string) error {
	c.memDrop(key, stale) // the table's token may be a fresh one
	lock, err := lockWait(ctx, c, "token:"+key)
	if err != nil {
		return err
	}
	defer lock.Unlock(ctx)
	if v, ok := c.get(ctx, key); ok && v != stale {
		return nil
	}
	return c.del(ctx, key)
}

// renewBefore is how long a token is cached: its lifetime less a margin of
// 5 minutes or a tenth, whichever is smaller.
func renewBefore(ttl time.Duration) time.Duration {
	return ttl - min(5*time.Minute, ttl/10)
}

// lockPoll is how often a token lock held by another replica is retried; a
// token fetch takes a few hundred milliseconds.
const lockPoll = 50 * time.Millisecond

// lockWait takes the advisory lock of name, waiting while another replica
// holds it.
func lockWait(ctx context.Context, c *TokenCache, name string) (*Lock, error) {
	for {
		lock, ok, err := TryLock(ctx, c.pool, name)
		if err != nil {
			return nil, err
		}
		if ok {
			return lock, nil
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("store: %s: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}
