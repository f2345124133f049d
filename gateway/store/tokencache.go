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
type TokenCache struct {
	pool *pgxpool.Pool
	aead cipher.AEAD
	now  func() time.Time
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
	return &TokenCache{pool: pool, aead: aead, now: now}, nil
}

// get returns the cached token, ok false when absent, expired or
// unreadable (a cache miss makes the caller fetch a fresh token).
func (c *TokenCache) get(ctx context.Context, key string) (token string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, tokenCacheTimeout)
	defer cancel()
	var sealed []byte
	err := c.pool.QueryRow(ctx, `SELECT value FROM token_cache WHERE key = $1 AND expires_at > $2`, key, c.now()).Scan(&sealed)
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
	return string(plain), true
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
	_, err := c.pool.Exec(ctx, `
INSERT INTO token_cache (key, value, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
		key, sealed, c.now().Add(timeout))
	if err != nil {
		return fmt.Errorf("store: token cache set: %w", err)
	}
	return nil
}

// del removes key's token.
func (c *TokenCache) del(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, tokenCacheTimeout)
	defer cancel()
	if _, err := c.pool.Exec(ctx, `DELETE FROM token_cache WHERE key = $1`, key); err != nil {
		return fmt.Errorf("store: token cache delete: %w", err)
	}
	return nil
}
