// Package wecom is the WeCom (企业微信) self-built app (自建应用) channel:
// it verifies and decrypts the app's message callbacks into channels.Inbound
// and sends replies through the active message API.
//
// The callback crypto (WXBizMsgCrypt) is written by hand in crypto.go because
// silenceper/wechat's util.DecryptMsg rejects an empty receiveid (AI bot) and
// 16-byte padding (DingTalk); the same Crypto serves those callbacks too.
// Sending goes through silenceper/wechat/v2/work so the access token is cached
// and shared the way the rest of the ecosystem expects.
package wecom

import (
	"errors"
	"time"
)

// ChannelName is the platform name used in channels.Inbound.Channel.
const ChannelName = "wecom"

// Limits taken from WeCom's documentation.
const (
	// MaxTextBytes: a text message's content is at most 2048 bytes; WeCom
	// silently cuts longer text, so Send refuses it instead.
	MaxTextBytes = 2048
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

// Defaults for AppConfig.
const (
	DefaultAPIBaseURL      = "https://qyapi.weixin.qq.com"
	DefaultTimestampWindow = 5 * time.Minute
)

// Sentinel errors that callers branch on; every error the package returns for
// these conditions wraps one of them (test with errors.Is). The gateway maps
// ErrSignature and ErrStale to 401/403, ErrDecrypt and ErrMalformed to 400.
var (
	// ErrSignature: msg_signature missing or not matching.
	ErrSignature = errors.New("wecom: bad signature")
	// ErrStale: timestamp missing, unparsable or outside the accepted window.
	ErrStale = errors.New("wecom: stale callback")
	// ErrDecrypt: ciphertext not base64, not whole blocks, bad padding, bad
	// length prefix, or a receiveid other than the expected one.
	ErrDecrypt = errors.New("wecom: cannot decrypt")
	// ErrMalformed: the envelope or the decrypted message is not the XML
	// WeCom sends, or lacks a field needed to identify the message.
	ErrMalformed = errors.New("wecom: malformed callback")
)
