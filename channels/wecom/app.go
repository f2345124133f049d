package wecom

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/silenceper/wechat/v2/cache"
	"github.com/silenceper/wechat/v2/work"
	"github.com/silenceper/wechat/v2/work/config"
	"github.com/silenceper/wechat/v2/work/material"
	"github.com/silenceper/wechat/v2/work/message"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
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
	// Cards asks confirmations and choices with template cards (cards.go);
	// their taps come to the callback URL. Default false here; the YAML
	// key `cards` defaults to true.
	Cards bool
}

// App is one configured self-built app: its callback codec and its sender.
// It is safe for concurrent use.
type App struct {
	name    string
	corpID  string
	agentID string
	agent   int64
	secret  string // only to wxbiz.Redact it from errors
	window  time.Duration
	cards   bool // template cards on (cards.go)
	now     func() time.Time
	log     *slog.Logger
	crypto  *wxbiz.Crypto
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
		window = wxbiz.DefaultTimestampWindow
	}
	if window < 0 {
		return nil, errf("negative timestamp window")
	}
	crypto, err := wxbiz.NewCrypto(cfg.Token, cfg.EncodingAESKey, cfg.CorpID)
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
	apiBases.registerApp(cfg.CorpID, cfg.Secret, base)
	tc := &appTokenCache{
		inner:  tokenCache,
		key:    tokenCacheKey(cfg.CorpID, cfg.AgentID),
		appKey: cfg.CorpID + "/" + cfg.AgentID + "@" + base, // one app per base
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
		cards:   cfg.Cards,
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
