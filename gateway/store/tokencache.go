package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// tokenCacheTimeout bounds one cache query.
const tokenCacheTimeout = 5 * time.Second

// TokenCache is the Postgres-backed channels.TokenCache (Token, Invalidate
// in tokenfetch.go): all replicas share one platform access token instead
// of each fetching its own. Values are sealed with AES-GCM under a key
// derived from a secret the replicas share (the app secret), so the table
// never holds a usable token in the clear.
//
// Each replica also keeps the tokens it read in memory until their
// expiry: a token is read from Postgres once per replica and lifetime, not
// once per send (issue 39: two reads per answered message). A token another
// replica replaced early is found stale by the platform, and Invalidate
// drops the memory's copy with the table's.
type TokenCache struct {
	pool *pgxpool.Pool
	aead cipher.AEAD
	now  func() time.Time

	mu  sync.Mutex
	mem map[string]memToken
	// misses serialise this replica's misses of a key (Token): one reads
	// or fetches while the others wait for its result in memory.
	misses map[string]*sync.Mutex
}

// missLock is key's lock of misses.
func (c *TokenCache) missLock(key string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.misses == nil {
		c.misses = map[string]*sync.Mutex{}
	}
	m, ok := c.misses[key]
	if !ok {
		m = &sync.Mutex{}
		c.misses[key] = m
	}
	return m
}

// memToken is a token held in memory and when it expires.
type memToken struct {
	token   string
	expires time.Time
}

// NewTokenCache returns a cache whose values are sealed with sealSecret.
func NewTokenCache(pool *pgxpool.Pool, sealSecret string, now func() time.Time) (*TokenCache, error) {
	if sealSecret == "" {
		return nil, errors.New("store: token cache: empty seal secret")
	}
	key := sha256.Sum256([]byte("hermes token cache v1\x00" + sealSecret))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, fmt.Errorf("store: token cache: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("store: token cache: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &TokenCache{pool: pool, aead: aead, now: now, mem: map[string]memToken{}}, nil
}

// get returns the cached token, ok false when absent, expired or
// unreadable (a cache miss makes the caller fetch a fresh token).
func (c *TokenCache) get(ctx context.Context, key string) (token string, ok bool) {
	now := c.now()
	if t, ok := c.memGet(key, now); ok {
		return t, true
	}
	ctx, cancel := context.WithTimeout(ctx, tokenCacheTimeout)
	defer cancel()
	var sealed []byte
	var expires time.Time
	err := c.pool.QueryRow(ctx, `SELECT value, expires_at FROM token_cache WHERE key = $1 AND expires_at > $2`, key, now).Scan(&sealed, &expires)
	if err != nil {
		if !errors.Is(err, pgx.ErrNoRows) {
			slog.Warn("token cache read failed; fetching a fresh token", "key", key, "err", err)
		}
		return "", false
	}
	ns := c.aead.NonceSize()
	if len(sealed) < ns {
		return "", false
	}
	plain, err := c.aead.Open(nil, sealed[:ns], sealed[ns:], []byte(key))
	if err != nil {
		slog.Warn("token cache value does not open (secret changed?); fetching a fresh token", "key", key)
		return "", false
	}
	c.memSet(key, string(plain), expires)
	return string(plain), true
}

// memGet is key's token held in memory, if it has not expired at now.
func (c *TokenCache) memGet(key string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.mem[key]
	if !ok || !now.Before(t.expires) {
		return "", false
	}
	return t.token, true
}

// memSet holds token in memory until expires.
func (c *TokenCache) memSet(key, token string, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mem[key] = memToken{token: token, expires: expires}
}

// memDrop forgets key's token held in memory if it is token ("" any).
func (c *TokenCache) memDrop(key, token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.mem[key]; ok && (token == "" || t.token == token) {
		delete(c.mem, key)
	}
}

// set stores token for timeout.
func (c *TokenCache) set(ctx context.Context, key, token string, timeout time.Duration) error {
	nonce := make([]byte, c.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("store: token cache: %w", err)
	}
	sealed := c.aead.Seal(nonce, nonce, []byte(token), []byte(key))
	ctx, cancel := context.WithTimeout(ctx, tokenCacheTimeout)
	defer cancel()
	expires := c.now().Add(timeout)
	_, err := c.pool.Exec(ctx, `
INSERT INTO token_cache (key, value, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
		key, sealed, expires)
	if err != nil {
		return fmt.Errorf("store: token cache set: %w", err)
	}
	c.memSet(key, token, expires)
	return nil
}

// del removes key's token.
func (c *TokenCache) del(ctx context.Context, key string) error {
	c.memDrop(key, "")
	ctx, cancel := context.WithTimeout(ctx, tokenCacheTimeout)
	defer cancel()
	if _, err := c.pool.Exec(ctx, `DELETE FROM token_cache WHERE key = $1`, key); err != nil {
		return fmt.Errorf("store: token cache delete: %w", err)
	}
	return nil
}
