package wecom

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
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
	// /wecom/bot/<name>/callback) or by long connection (package aibot).
	Bots []aibot.Config `yaml:"bots"`
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
	// Cards asks confirmations and choices with template cards whose taps
	// come to the app's callback URL (接收消息). Default true.
	Cards *bool `yaml:"cards"`
}

// Platform registers the `wecom:` section.
var Platform = channels.NewPlatform[Config](ChannelName)

// ApplyDefaults fills every unset key with its default.
func (c *Config) ApplyDefaults() {
	if c.TimestampWindow <= 0 {
		c.TimestampWindow = wxbiz.DefaultTimestampWindow
	}
	for i := range c.Apps {
		if c.Apps[i].APIBaseURL == "" {
			c.Apps[i].APIBaseURL = DefaultAPIBaseURL
		}
		if c.Apps[i].Cards == nil {
			on := true
			c.Apps[i].Cards = &on
		}
	}
	for i := range c.Bots {
		c.Bots[i].ApplyDefaults()
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
		if _, err := wxbiz.DecodeAESKey(v); err != nil {
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
		for _, p := range b.Problems() {
			errs = append(errs, ChannelName+"."+key+"."+p)
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
	ch := &Channel{apps: map[string]*App{}, bots: map[string]*aibot.Bot{}, now: env.Now, log: env.Logger}
	for i, s := range c.Apps {
		cache, err := env.TokenCache(s.Secret)
		if err != nil {
			return nil, fmt.Errorf("%s.apps[%d]: %w", ChannelName, i, err)
		}
		app, err := NewApp(AppConfig{
			Name: s.Name, CorpID: s.CorpID, AgentID: s.AgentID, Secret: s.Secret,
			Token: s.Token, EncodingAESKey: s.EncodingAESKey, APIBaseURL: s.APIBaseURL,
			TimestampWindow: c.TimestampWindow, Logger: env.Logger, Cards: s.Cards == nil || *s.Cards,
		}, newSharedTokens(ctx, cache), env.Now)
		if err != nil {
			return nil, fmt.Errorf("%s.apps[%d]: %w", ChannelName, i, err)
		}
		ch.apps[s.Name] = app
	}
	for i, s := range c.Bots {
		bot, err := aibot.New(s, c.TimestampWindow, env)
		if err != nil {
			return nil, fmt.Errorf("%s.bots[%d]: %w", ChannelName, i, err)
		}
		ch.bots[s.Name] = bot
	}
	return ch, nil
}
