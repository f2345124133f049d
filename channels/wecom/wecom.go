package wecom

import (
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// ChannelName is the platform name used in channels.Inbound.Channel, for
// apps and AI bots alike.
const ChannelName = wxbiz.ChannelName

// Limits taken from WeCom's documentation.
const (
	// MaxTextBytes: a text message's content is at most 2048 bytes; WeCom
	// silently cuts longer text, so Send refuses it instead.
	MaxTextBytes = 2048
	// AppSendsPerUserPerMinute: an app may send one member at most 30
	// messages a minute; WeCom drops the rest ("每应用对同一个成员不可超过30次/分钟").
	AppSendsPerUserPerMinute = 30
	// MaxMarkdownBytes: a markdown message's content is at most 4096 bytes.
	MaxMarkdownBytes = 4096
	// MaxDuplicateCheckInterval: duplicate_check_interval may not exceed 4 hours.
	MaxDuplicateCheckInterval = 4 * time.Hour
	// CallbackDeadline: WeCom waits 5 s for the callback answer, then drops the
	// connection and retries (three tries in all). Answer first, work later.
	CallbackDeadline = 5 * time.Second
	// AccessTokenTTL: gettoken's expires_in is 7200 s, though WeCom may
	// invalidate a token early (errcode 40014 / 42001).
	AccessTokenTTL = 7200 * time.Second
)

// DefaultAPIBaseURL is AppConfig.APIBaseURL's default. (The callback
// timestamp window's default is wxbiz.DefaultTimestampWindow.)
const DefaultAPIBaseURL = "https://qyapi.weixin.qq.com"
