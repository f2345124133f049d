package feishu

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// Config is the `feishu:` section of hermes.yaml. Every key is documented,
// with its default, in hermes.example.yaml.
type Config struct {
	// TimestampWindow: HTTP-mode events whose X-Lark-Request-Timestamp is
	// further than this from now, either way, are refused (401, recorded as
	// a timestamp refusal). Default 5m (DefaultTimestampWindow).
	TimestampWindow time.Duration `yaml:"timestamp_window"`
	// Apps are the custom apps (企业自建应用) with the bot capability; one
	// per tenant or per bot. Events arrive at /feishu/<name>/events (mode
	// http) or over a long connection (mode websocket).
	Apps []AppSection `yaml:"apps"`
}

// Modes of receiving events.
const (
	ModeHTTP      = "http"
	ModeWebSocket = "websocket"
)

// Sender id types (Identity.UserID).
const (
	IDTypeUserID = "user_id" // the tenant's user ID; needs contact:user.employee_id:readonly
	IDTypeOpenID = "open_id" // the user's id within this app; always present
)

// AppSection is one app.
type AppSection struct {
	// Name is the account name, [a-z0-9-]+; in the event path. Required.
	Name string `yaml:"name"`
	// Mode is "http" (事件订阅: 将事件发送至开发者服务器; needs a public
	// URL) or "websocket" (使用长连接接收事件; no public URL). Default http.
	Mode string `yaml:"mode"`
	// AppID and AppSecret: 凭证与基础信息. Required.
	AppID     string `yaml:"app_id"`
	AppSecret string `yaml:"app_secret"`
	// VerificationToken and EncryptKey: 事件与回调 → 加密策略. Required in
	// http mode (the signature needs the Encrypt Key).
	VerificationToken string `yaml:"verification_token"`
	EncryptKey        string `yaml:"encrypt_key"`
	// Domain is the OpenAPI origin: https://open.feishu.cn (default) or
	// https://open.larksuite.com (Lark); any http(s) origin for tests.
	Domain string `yaml:"domain"`
	// IDType is which sender id skills see as the user id: "user_id"
	// (default; the tenant's stable user ID, which needs the scope
	// contact:user.employee_id:readonly) or "open_id" (per app).
	IDType string `yaml:"id_type"`
	// Streaming shows answers while they grow in a CardKit streaming card
	// (needs the scope cardkit:card:write). Default false.
	Streaming bool `yaml:"streaming"`
	// StreamDeadline is how long after the message a streaming card may
	// still show the answer; after it the answer is sent as a message.
	// Default 3m.
	StreamDeadline time.Duration `yaml:"stream_deadline"`
	// Cards asks confirmations with 确认 / 取消 buttons (cards.go; needs the
	// callback card.action.trigger subscribed: 事件与回调 → 回调配置, then a
	// published version). Default true; typing 确认 works either way.
	Cards *bool `yaml:"cards"`
}

// Platform registers the `feishu:` section.
var Platform = channels.NewPlatform[Config](ChannelName)

// ApplyDefaults fills every unset key with its default.
func (c *Config) ApplyDefaults() {
	if c.TimestampWindow == 0 {
		c.TimestampWindow = DefaultTimestampWindow
	}
	for i := range c.Apps {
		a := &c.Apps[i]
		if a.Mode == "" {
			a.Mode = ModeHTTP
		}
		if a.Domain == "" {
			a.Domain = DomainFeishu
		}
		a.Domain = strings.TrimRight(a.Domain, "/")
		if a.IDType == "" {
			a.IDType = DefaultIDType
		}
		if a.StreamDeadline == 0 {
			a.StreamDeadline = DefaultStreamDeadline
		}
		if a.Cards == nil {
			on := true
			a.Cards = &on
		}
	}
}

// validate reports every problem at once, each naming its key, e.g.
// "feishu.apps[0].app_secret: required".
func (c *Config) Validate() error {
	var errs []string
	bad := func(key, format string, args ...any) {
		errs = append(errs, ChannelName+"."+key+": "+fmt.Sprintf(format, args...))
	}
	required := func(key, field, v string) {
		if strings.TrimSpace(v) == "" {
			bad(key+"."+field, "required")
		}
	}
	if c.TimestampWindow < 0 {
		bad("timestamp_window", "must be positive, got %s", c.TimestampWindow)
	}
	seen := map[string]bool{}
	for i, a := range c.Apps {
		key := fmt.Sprintf("apps[%d]", i)
		if err := channels.CheckAccountName(a.Name); err != nil {
			bad(key+".name", "%v", err)
		} else if seen[a.Name] {
			bad(key+".name", "duplicate name %q", a.Name)
		}
		seen[a.Name] = true
		required(key, "app_id", a.AppID)
		required(key, "app_secret", a.AppSecret)
		switch a.Mode {
		case ModeHTTP:
			required(key, "verification_token", a.VerificationToken)
			if strings.TrimSpace(a.EncryptKey) == "" {
				bad(key+".encrypt_key", "required in http mode: without it Feishu signs nothing and anyone knowing the URL could post events")
			}
		case ModeWebSocket:
		default:
			bad(key+".mode", "must be http or websocket, got %q", a.Mode)
		}
		// Domain names the cloud (open.feishu.cn, open.larksuite.com): a
		// path there was copied from an API URL, so it is refused rather
		// than taken for a prefix.
		if base, err := channels.ParseBaseURL(a.Domain, "http", "https"); err != nil || strings.Count(base, "/") > 2 {
			bad(key+".domain", "must be an http(s) origin such as %s or %s, got %q", DomainFeishu, DomainLark, a.Domain)
		}
		if a.IDType != IDTypeUserID && a.IDType != IDTypeOpenID {
			bad(key+".id_type", "must be user_id or open_id, got %q", a.IDType)
		}
		if a.StreamDeadline < 0 {
			bad(key+".stream_deadline", "must be positive, got %s", a.StreamDeadline)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Build makes the channel of every configured app. The app starts nothing
// that outlives a call or its connection's session, so ctx is not kept.
func (c *Config) Build(_ context.Context, env channels.Env) (channels.Channel, error) {
	ch := newChannel(env)
	for i, s := range c.Apps {
		cache, err := env.TokenCache(s.AppSecret)
		if err != nil {
			return nil, fmt.Errorf("%s.apps[%d]: %w", ChannelName, i, err)
		}
		a := newApp(s, c.TimestampWindow, cache, env)
		ch.apps[s.Name] = a
	}
	return ch, nil
}
