package aibot

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// Bot modes.
const (
	ModeCallback  = "callback"
	ModeWebSocket = "websocket"
)

// Config is one AI bot, an entry of the `wecom:` section's bots.
type Config struct {
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
	// DefaultFetchHosts, the hosts WeCom documents.
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

// DefaultFetchHosts are the hosts of the URLs an AI bot's callbacks and
// frames carry, as WeCom documents them (智能机器人 接收消息 and 主动回复消息):
// media on WeCom's COS bucket, response_url on the API host.
var DefaultFetchHosts = []string{
	"qyapi.weixin.qq.com",
	"ww-aibot-img-1258476243.cos.ap-guangzhou.myqcloud.com",
}

// DefaultURL is the public long-connection endpoint of AI bots.
const DefaultURL = "wss://openws.work.weixin.qq.com"

// ApplyDefaults fills every unset key with its default.
func (c *Config) ApplyDefaults() {
	if c.Mode == "" {
		c.Mode = ModeCallback
	}
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if len(c.FetchHosts) == 0 {
		c.FetchHosts = slices.Clone(DefaultFetchHosts)
	}
}

// Problems lists every problem of the bot's settings but its name (the
// `wecom:` section checks names across apps and bots), each as its key
// within the bot and what is wrong, e.g. "corp_id: required".
func (c *Config) Problems() []string {
	var errs []string
	bad := func(key, format string, args ...any) {
		errs = append(errs, key+": "+fmt.Sprintf(format, args...))
	}
	required := func(key, v string) {
		if strings.TrimSpace(v) == "" {
			bad(key, "required")
		}
	}
	required("corp_id", c.CorpID)
	switch c.Mode {
	case ModeCallback:
		required("token", c.Token)
		if _, err := wxbiz.DecodeAESKey(c.EncodingAESKey); err != nil {
			bad("encoding_aes_key", "%v", err)
		}
	case ModeWebSocket:
		required("bot_id", c.BotID)
		required("secret", c.Secret)
		if _, err := channels.ParseBaseURL(c.URL, "ws", "wss"); err != nil {
			bad("url", "%v", err)
		}
	default:
		bad("mode", "must be callback or websocket, got %q", c.Mode)
	}
	if _, _, err := channels.ParseHostPatterns(c.FetchHosts); err != nil {
		// err starts with the pattern's index: fetch_hosts[1]: ...
		errs = append(errs, "fetch_hosts"+err.Error())
	}
	if _, err := channels.ParseAddrRanges(c.FetchAllowAddresses); err != nil {
		errs = append(errs, "fetch_allow_addresses"+err.Error())
	}
	return errs
}
