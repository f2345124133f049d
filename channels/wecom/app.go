package wecom

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/silenceper/wechat/v2/cache"
	"github.com/silenceper/wechat/v2/credential"
	"github.com/silenceper/wechat/v2/work"
	"github.com/silenceper/wechat/v2/work/config"
	"github.com/silenceper/wechat/v2/work/material"
	"github.com/silenceper/wechat/v2/work/message"

	"github.com/hermes-gw/hermes/channels"
)

// AppConfig configures one WeCom self-built app.
type AppConfig struct {
	// Name is the account name: it appears in the callback path and in
	// Inbound.Account / Outbound.Account (channels.ValidAccountName).
	Name string
	// CorpID is the corp id (企业ID); it is also the callback receiveid.
	CorpID string
	// AgentID is the app's AgentId, a decimal integer.
	AgentID string
	// Secret is the app secret used to fetch access tokens. Never logged.
	Secret string
	// Token and EncodingAESKey are the callback settings (接收消息 API).
	Token, EncodingAESKey string
	// APIBaseURL is the WeCom API origin, default "https://qyapi.weixin.qq.com";
	// set it for private-cloud WeCom or a test server.
	APIBaseURL string
	// TimestampWindow is how far a callback's timestamp may be from now, in
	// either direction, default 5m; callbacks outside it are refused.
	TimestampWindow time.Duration
	// Logger receives the operator-facing errors (e.g. errcode 60020),
	// default slog.Default().
	Logger *slog.Logger
}

// App is one configured self-built app: its callback codec and its sender.
// It is safe for concurrent use.
type App struct {
	name    string
	corpID  string
	agentID string
	agent   int64
	secret  string // only to redact it from errors
	window  time.Duration
	now     func() time.Time
	log     *slog.Logger
	crypto  *Crypto
	tokens  *appTokenCache
	message *message.Client
	media   *material.Client // uploads images (media.go)
	dir     *directory
}

// NewApp checks cfg and returns the app. tokenCache stores the access token
// (the gateway passes one shared by all replicas); it must be safe for
// concurrent use by several apps (silenceper's cache.Memory is safe only when
// each app has its own). now is the clock, nil for time.Now.
//
// NewApp also installs, once per process, the URI modifier that routes this
// app's API calls to its APIBaseURL (see apibase.go).
func NewApp(cfg AppConfig, tokenCache cache.Cache, now func() time.Time) (*App, error) {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("wecom: app %q: "+format, append([]any{cfg.Name}, args...)...)
	}
	if err := channels.CheckAccountName(cfg.Name); err != nil {
		return nil, errf("name: %w", err)
	}
	if cfg.CorpID == "" {
		return nil, errf("empty corp id")
	}
	agent, err := parseAgentID(cfg.AgentID)
	if err != nil {
		return nil, errf("agent id: %w", err)
	}
	if cfg.Secret == "" {
		return nil, errf("empty secret")
	}
	if tokenCache == nil {
		return nil, errf("nil token cache")
	}
	base, err := apiBaseURL(cfg.APIBaseURL)
	if err != nil {
		return nil, errf("API base URL: %w", err)
	}
	window := cfg.TimestampWindow
	if window == 0 {
		window = DefaultTimestampWindow
	}
	if window < 0 {
		return nil, errf("negative timestamp window")
	}
	crypto, err := NewCrypto(cfg.Token, cfg.EncodingAESKey, cfg.CorpID)
	if err != nil {
		return nil, errf("%w", err)
	}
	if now == nil {
		now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}

	installAPIBase()
	apiBases.registerCorp(cfg.CorpID, base)
	tc := &appTokenCache{
		inner:  tokenCache,
		key:    tokenCacheKey(cfg.CorpID, cfg.AgentID),
		appKey: cfg.CorpID + "/" + cfg.AgentID,
		base:   base,
	}
	wk := work.NewWork(&config.Config{
		CorpID:     cfg.CorpID,
		CorpSecret: cfg.Secret,
		AgentID:    cfg.AgentID,
		Cache:      tc,
	})
	return &App{
		name:    cfg.Name,
		corpID:  cfg.CorpID,
		agentID: cfg.AgentID,
		agent:   agent,
		secret:  cfg.Secret,
		window:  window,
		now:     now,
		log:     logger,
		crypto:  crypto,
		tokens:  tc,
		message: wk.GetMessage(),
		media:   wk.GetMaterial(),
		dir:     &directory{client: wk.GetAddressList(), entries: map[string]dirEntry{}},
	}, nil
}

// Name returns the account name.
func (a *App) Name() string { return a.name }

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

// invalidate drops the app's cached token so the next call fetches a fresh
// one. Another replica may have just stored a fresh token under the same key;
// deleting it costs one extra gettoken, which is cheaper than a CAS the cache
// interface does not offer.
func (t *appTokenCache) invalidate() error {
	if err := t.Delete(t.key); err != nil {
		return fmt.Errorf("wecom: drop cached access token: %w", err)
	}
	return nil
}
