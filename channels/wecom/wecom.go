package wecom

import (
	"fmt"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// ChannelName is the platform name used in channels.Inbound.Channel.
const ChannelName = "wecom"

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

// Defaults for AppConfig.
const (
	DefaultAPIBaseURL      = "https://qyapi.weixin.qq.com"
	DefaultTimestampWindow = 5 * time.Minute
)

// Sentinel errors that callers branch on; every error the package returns for
// these conditions wraps one of them (test with errors.Is). They wrap the
// shared refusals of package channels, so ErrSignature and ErrStale answer
// 401, ErrDecrypt and ErrMalformed 400 (channels.HTTPStatus), and
// channels.RefusalCheck names the check each failed.
var (
	// ErrSignature: msg_signature missing or not matching.
	ErrSignature = fmt.Errorf("wecom: %w", channels.ErrSignature)
	// ErrStale: timestamp missing, unparsable or outside the accepted window.
	ErrStale = fmt.Errorf("wecom: %w", channels.ErrStale)
	// ErrDecrypt: ciphertext not base64, not whole blocks, bad padding, bad
	// length prefix, or a receiveid other than the expected one.
	ErrDecrypt = fmt.Errorf("wecom: %w", channels.ErrDecrypt)
	// ErrMalformed: the envelope or the decrypted message is not the XML
	// (or JSON) WeCom sends, or lacks a field needed to identify the message.
	ErrMalformed = fmt.Errorf("wecom: %w", channels.ErrMalformed)
)
