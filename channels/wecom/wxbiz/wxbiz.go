// Package wxbiz is what WeCom's two receivers share: the self-built app's
// XML callbacks (package wecom) and the AI bot's JSON callbacks and long
// connection (package aibot). It holds the WXBizMsgCrypt codec
// (crypto.go), the checks of a callback that uses it and its refusals
// (callback.go), WeCom's errcodes and the redaction of credentials from
// errors (errcodes.go), and the platform's name. The name is WeCom's own
// prefix for this layer (WXBizMsgCrypt, WXBizJsonMsgCrypt).
//
// It is a leaf under both: package wecom (the `wecom:` section, the
// Channel, the apps) builds the bots through package aibot, so the bot
// cannot import wecom for these pieces, and one copy of each lives here.
// It imports nothing of Hermes but package channels.
package wxbiz

import (
	"fmt"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// ChannelName is the platform name used in channels.Inbound.Channel, for
// apps and AI bots alike.
const ChannelName = "wecom"

// DefaultTimestampWindow: a callback whose timestamp is further than this
// from now, either way, is refused (the `wecom:` section's
// timestamp_window).
const DefaultTimestampWindow = 5 * time.Minute

// TempMediaLifetime: a temporary media's media_id is valid for three days
// after the upload ("media_id仅三天内有效"), for apps and AI bots alike.
const TempMediaLifetime = 72 * time.Hour

// Sentinel errors that callers branch on; every error the WeCom packages
// return for these conditions wraps one of them (test with errors.Is).
// They wrap the shared refusals of package channels, so ErrSignature and
// ErrStale answer 401, ErrDecrypt and ErrMalformed 400
// (channels.HTTPStatus), and channels.RefusalCheck names the check each
// failed.
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
