package wecom

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/silenceper/wechat/v2/cache"
	"github.com/silenceper/wechat/v2/credential"

	"github.com/hermes-gw/hermes/channels"
)

// Access tokens: silenceper's WorkAccessToken reads and stores the app's
// token through a cache.Cache (Get and Set of interface{} values). The
// gateway's cache shared by the replicas is a channels.TokenCache (Token,
// Invalidate) that holds strings; sharedTokens adapts it here, inside the
// package that uses silenceper, and appTokenCache wraps either for one app.

// tokenCacheKey is the key silenceper's WorkAccessToken uses when AgentID is
// set (credential/default_access_token.go, v2.1.10):
// "gowechat_work__access_token_<corpid>_<agentid>". Send needs it to drop a
// token WeCom has invalidated early.
func tokenCacheKey(corpID, agentID string) string {
	return fmt.Sprintf("%s_access_token_%s_%s", credential.CacheKeyWorkPrefix, corpID, agentID)
}

// appTokenCache wraps the caller's cache for one app. It
//   - records the app's token in the API base registry whenever it is Set or
//     Got, so that message/send URLs can be routed to the app's base URL;
//   - hands silenceper only non-empty strings: WorkAccessToken asserts
//     val.(string) and would panic on anything else, and would use "" as a
//     token;
//   - serialises calls, because silenceper's own cache.Memory reads its map
//     without a lock while our invalidate deletes outside silenceper's token
//     lock. silenceper already serialises Get/Set per app, so this costs
//     nothing.
type appTokenCache struct {
	mu     sync.Mutex
	inner  cache.Cache
	key    string
	appKey string
	base   string
}

func (t *appTokenCache) Get(key string) interface{} {
	t.mu.Lock()
	v := t.inner.Get(key)
	t.mu.Unlock()
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	}
	if s == "" {
		return nil
	}
	if key == t.key {
		apiBases.noteToken(t.appKey, s, t.base)
	}
	return s
}

func (t *appTokenCache) Set(key string, val interface{}, timeout time.Duration) error {
	if s, ok := val.(string); ok && key == t.key {
		apiBases.noteToken(t.appKey, s, t.base)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inner.Set(key, val, timeout)
}

func (t *appTokenCache) IsExist(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inner.IsExist(key)
}

func (t *appTokenCache) Delete(key string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inner.Delete(key)
}

// invalidate drops the app's cached token, the one WeCom just refused, so
// the next call fetches a fresh one (over the shared cache, a fresh token
// another replica stored meanwhile stays: see sharedTokens.Delete).
func (t *appTokenCache) invalidate() error {
	if err := t.Delete(t.key); err != nil {
		return fmt.Errorf("wecom: drop cached access token: %w", err)
	}
	return nil
}

// tokenCallTimeout bounds one shared-cache call; silenceper's cache
// interface passes no context.
const tokenCallTimeout = 5 * time.Second

// errNotCached is what sharedTokens.Get's fetch answers: a miss, which
// silenceper then fills by fetching a token and calling Set.
var errNotCached = errors.New("wecom: access token not cached")

// sharedTokens is silenceper's cache.Cache over a channels.TokenCache. It
// remembers, per key, the token it last read or stored: the one silenceper
// used, so Delete (WeCom refused it) drops that token only, never a fresh
// one another replica stored meanwhile.
type sharedTokens struct {
	tokens channels.TokenCache
	life   context.Context // silenceper passes no context: calls end with this one

	mu   sync.Mutex
	last map[string]string
}

func newSharedTokens(life context.Context, tokens channels.TokenCache) *sharedTokens {
	return &sharedTokens{tokens: tokens, life: life, last: map[string]string{}}
}

// Get returns the live token under key, or nil (a miss, or the cache
// unreachable: silenceper then fetches a token itself).
func (c *sharedTokens) Get(key string) interface{} {
	ctx, cancel := context.WithTimeout(c.life, tokenCallTimeout)
	defer cancel()
	tok, err := c.tokens.Token(ctx, key, func(context.Context) (string, time.Duration, error) { return "", 0, errNotCached })
	if err != nil || tok == "" {
		return nil
	}
	c.remember(key, tok)
	return tok
}

// Set stores the token silenceper fetched for timeout, unless another
// replica stored one first (both are valid: WeCom hands out the same token
// until it expires).
func (c *sharedTokens) Set(key string, val interface{}, timeout time.Duration) error {
	s, ok := val.(string)
	if !ok || s == "" {
		return fmt.Errorf("wecom: token cache: value of type %T, want a token", val)
	}
	ctx, cancel := context.WithTimeout(c.life, tokenCallTimeout)
	defer cancel()
	tok, err := c.tokens.Token(ctx, key, func(context.Context) (string, time.Duration, error) { return s, timeout, nil })
	if err != nil {
		return fmt.Errorf("wecom: token cache: %w", err)
	}
	c.remember(key, tok)
	return nil
}

// IsExist reports whether a live token is cached under key.
func (c *sharedTokens) IsExist(key string) bool { return c.Get(key) != nil }

// Delete drops key's token if it is still the one this app last used.
func (c *sharedTokens) Delete(key string) error {
	c.mu.Lock()
	stale := c.last[key]
	delete(c.last, key)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.life, tokenCallTimeout)
	defer cancel()
	if err := c.tokens.Invalidate(ctx, key, stale); err != nil {
		return fmt.Errorf("wecom: token cache: %w", err)
	}
	return nil
}

func (c *sharedTokens) remember(key, tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[key] = tok
}

var _ cache.Cache = (*sharedTokens)(nil)
