package wecom

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// Config is the `wecom:` section of hermes.yaml. Every key is documented,
// with its default, in hermes.example.yaml.
type Config struct {
	// TimestampWindow: callbacks whose timestamp is further than this from
	// now, either way, are refused. Default 5m.
	TimestampWindow time.Duration `yaml:"timestamp_window"`
	// Apps are the self-built apps (自建应用); callback URL
	// /wecom/<name>/callback.
	Apps []AppSection `yaml:"apps"`
	// Bots are the AI bots (智能机器人), by callback (URL
	// /wecom/bot/<name>/callback) or by long connection.
	Bots []BotSection `yaml:"bots"`
}

// AppSection is one self-built app.
type AppSection struct {
	Name           string `yaml:"name"`             // required, [a-z0-9-]+; in the callback path
	CorpID         string `yaml:"corp_id"`          // required, 企业ID
	AgentID        string `yaml:"agent_id"`         // required, AgentId
	Secret         string `yaml:"secret"`           // required, use ${ENV}
	Token          string `yaml:"token"`            // required, callback Token
	EncodingAESKey string `yaml:"encoding_aes_key"` // required, 43 characters
	APIBaseURL     string `yaml:"api_base_url"`     // default https://qyapi.weixin.qq.com
}

// Bot modes.
const (
	BotModeCallback  = "callback"
	BotModeWebSocket = "websocket"
)

// BotSection is one AI bot.
type BotSection struct {
	Name string `yaml:"name"` // required, [a-z0-9-]+
	// Mode is "callback" (WeCom POSTs to /wecom/bot/<name>/callback; needs a
	// public URL) or "websocket" (Hermes keeps a long connection; no public
	// URL). Default callback.
	Mode string `yaml:"mode"`
	// CorpID is the corp the bot belongs to; the senders' identity carries
	// it. Required.
	CorpID string `yaml:"corp_id"`
	// Token and EncodingAESKey: the bot's callback settings (callback mode).
	Token          string `yaml:"token"`
	EncodingAESKey string `yaml:"encoding_aes_key"` // 43 characters
	// BotID and Secret: the long-connection credentials (websocket mode).
	BotID  string `yaml:"bot_id"`
	Secret string `yaml:"secret"` // use ${ENV}
	// URL of the long-connection endpoint, default
	// wss://openws.work.weixin.qq.com (private deployments show theirs in the
	// admin console).
	URL string `yaml:"url"`
	// BotName is the bot's name as set in the admin console (what follows
	// "@" when someone mentions it). Its mention is removed wherever it
	// stands in a group message; other mentions stay. Default empty: the
	// name is learned from a message that mentions only the bot.
	BotName string `yaml:"bot_name"`
	// FetchHosts are the hosts Hermes fetches a URL from when it arrives
	// inside one of the bot's callbacks or frames (a media URL, a
	// response_url): exact names or "*.suffix". Default
	// DefaultBotFetchHosts, the hosts WeCom documents.
	FetchHosts []string `yaml:"fetch_hosts"`
	// FetchAllowPrivate also lets those URLs use plain http and connect to
	// internal addresses (loopback, private, link-local): for an on-prem
	// WeCom or a proxy inside the network. Default false.
	FetchAllowPrivate bool `yaml:"fetch_allow_private"`
	// FetchAllowAddresses are internal addresses or CIDR ranges those URLs
	// may still connect to, over https only: a cloud whose own DNS answers
	// WeCom's media host with an address of its internal network. Default
	// none.
	FetchAllowAddresses []string `yaml:"fetch_allow_addresses"`
}

// DefaultBotFetchHosts are the hosts of the URLs an AI bot's callbacks and
// frames carry, as WeCom documents them (智能机器人 接收消息 and 主动回复消息):
// media on WeCom's COS bucket, response_url on the API host.
var DefaultBotFetchHosts = []string{
	"qyapi.weixin.qq.com",
	"ww-aibot-img-1258476243.cos.ap-guangzhou.myqcloud.com",
}

// DefaultBotURL is the public long-connection endpoint of AI bots.
const DefaultBotURL = "wss://openws.work.weixin.qq.com"

// Platform registers the `wecom:` section.
var Platform = channels.NewPlatform[Config](ChannelName)

// ApplyDefaults fills every unset key with its default.
func (c *Config) ApplyDefaults() {
	if c.TimestampWindow <= 0 {
		c.TimestampWindow = DefaultTimestampWindow
	}
	for i := range c.Apps {
		if c.Apps[i].APIBaseURL == "" {
			c.Apps[i].APIBaseURL = DefaultAPIBaseURL
		}
	}
	for i := range c.Bots {
		b := &c.Bots[i]
		if b.Mode == "" {
			b.Mode = BotModeCallback
		}
		if b.URL == "" {
			b.URL = DefaultBotURL
		}
		if len(b.FetchHosts) == 0 {
			b.FetchHosts = slices.Clone(DefaultBotFetchHosts)
		}
	}
}

// validate reports every problem at once, each naming its key, e.g.
// "wecom.apps[0].corp_id: required".
func (c *Config) Validate() error {
	var errs []string
	bad := func(key, format string, args ...any) {
		errs = append(errs, ChannelName+"."+key+": "+fmt.Sprintf(format, args...))
	}
	required := func(key string, fields ...[2]string) {
		for _, f := range fields {
			if strings.TrimSpace(f[1]) == "" {
				bad(key+"."+f[0], "required")
			}
		}
	}
	aesKey := func(key, v string) {
		if _, err := decodeAESKey(v); err != nil {
			bad(key+".encoding_aes_key", "%v", err)
		}
	}
	seen := map[string]bool{}
	name := func(key, n string) {
		if err := channels.CheckAccountName(n); err != nil {
			bad(key+".name", "%v", err)
		} else if seen[n] {
			bad(key+".name", "duplicate name %q (apps and bots share one name space)", n)
		}
		seen[n] = true
	}
	for i, a := range c.Apps {
		key := fmt.Sprintf("apps[%d]", i)
		name(key, a.Name)
		required(key, [2]string{"corp_id", a.CorpID}, [2]string{"agent_id", a.AgentID},
			[2]string{"secret", a.Secret}, [2]string{"token", a.Token})
		if a.AgentID != "" {
			if _, err := parseAgentID(a.AgentID); err != nil {
				bad(key+".agent_id", "%v", err)
			}
		}
		aesKey(key, a.EncodingAESKey)
		if _, err := apiBaseURL(a.APIBaseURL); err != nil {
			bad(key+".api_base_url", "%v", err)
		}
	}
	for i, b := range c.Bots {
		key := fmt.Sprintf("bots[%d]", i)
		name(key, b.Name)
		required(key, [2]string{"corp_id", b.CorpID})
		switch b.Mode {
		case BotModeCallback:
			required(key, [2]string{"token", b.Token})
			aesKey(key, b.EncodingAESKey)
		case BotModeWebSocket:
			required(key, [2]string{"bot_id", b.BotID}, [2]string{"secret", b.Secret})
			if _, err := channels.ParseBaseURL(b.URL, "ws", "wss"); err != nil {
				bad(key+".url", "%v", err)
			}
		default:
			bad(key+".mode", "must be callback or websocket, got %q", b.Mode)
		}
		if _, _, err := channels.ParseHostPatterns(b.FetchHosts); err != nil {
			// err starts with the pattern's index: fetch_hosts[1]: ...
			errs = append(errs, ChannelName+"."+key+".fetch_hosts"+err.Error())
		}
		if _, err := channels.ParseAddrRanges(b.FetchAllowAddresses); err != nil {
			errs = append(errs, ChannelName+"."+key+".fetch_allow_addresses"+err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Build makes the channel of every configured app and bot; ctx is the
// gateway's lifetime (channels.Platform.New): the token cache calls
// silenceper makes without a context end with it.
func (c *Config) Build(ctx context.Context, env channels.Env) (channels.Channel, error) {
	ch := &Channel{apps: map[string]*App{}, bots: map[string]*Bot{}, now: env.Now, log: env.Logger}
	for i, s := range c.Apps {
		cache, err := env.TokenCache(s.Secret)
		if err != nil {
			return nil, fmt.Errorf("%s.apps[%d]: %w", ChannelName, i, err)
		}
		app, err := NewApp(AppConfig{
			Name: s.Name, CorpID: s.CorpID, AgentID: s.AgentID, Secret: s.Secret,
			Token: s.Token, EncodingAESKey: s.EncodingAESKey, APIBaseURL: s.APIBaseURL,
			TimestampWindow: c.TimestampWindow, Logger: env.Logger,
		}, newSharedTokens(ctx, cache), env.Now)
		if err != nil {
			return nil, fmt.Errorf("%s.apps[%d]: %w", ChannelName, i, err)
		}
		ch.apps[s.Name] = app
	}
	for i, s := range c.Bots {
		bot, err := NewBot(s, c.TimestampWindow, env)
		if err != nil {
			return nil, fmt.Errorf("%s.bots[%d]: %w", ChannelName, i, err)
		}
		ch.bots[s.Name] = bot
	}
	return ch, nil
}
