package wxbiz

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// MaxCallbackBytes bounds a callback body, and WeCom's answer to a call;
// WeCom's encrypted XML or JSON is a few KiB.
const MaxCallbackBytes = 1 << 20

// ReadBody reads a callback body within MaxCallbackBytes. Errors wrap
// channels.ErrBadRequest.
func ReadBody(r *http.Request) ([]byte, error) {
	body, err := ReadLimited(r.Body, MaxCallbackBytes)
	if err != nil {
		return nil, fmt.Errorf("wecom: read callback body: %w: %w", channels.ErrBadRequest, err)
	}
	return body, nil
}

// ReadLimited reads at most limit bytes; a longer body is an error rather
// than silently cut. (channels.ReadLimited is the media reader: its
// refusal is ErrMediaTooLarge, not a bad request.)
func ReadLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("body over %d bytes", limit)
	}
	return b, nil
}

// CheckQuery verifies msg_signature over encrypt, then the timestamp
// window, for apps and AI bots alike. The signature comes first so that a
// forger cannot probe our clock. Errors: ErrSignature or one wrapping
// ErrStale.
func CheckQuery(c *Crypto, q url.Values, encrypt string, now time.Time, window time.Duration) error {
	ts, nonce := q.Get("timestamp"), q.Get("nonce")
	if !c.VerifySignature(q.Get("msg_signature"), ts, nonce, encrypt) {
		return ErrSignature
	}
	_, err := channels.VerifyTimestamp(ts, time.Second, now, window, ErrStale)
	return err
}

// VerifyEcho checks a URL verification query (signature over echostr,
// then the timestamp window) and returns echostr decrypted. Apps and AI
// bots verify their callback URLs alike; only the receiveid in c differs.
// Errors wrap ErrSignature, ErrStale or ErrDecrypt.
func VerifyEcho(c *Crypto, q url.Values, now time.Time, window time.Duration) ([]byte, error) {
	echo := q.Get("echostr")
	if err := CheckQuery(c, q, echo, now, window); err != nil {
		return nil, err
	}
	return c.Decrypt(echo)
}

// ServeEcho answers a URL verification (app or AI bot) with the bare
// plaintext verify returns: no quotes, no newline.
func ServeEcho(w http.ResponseWriter, r *http.Request, log *slog.Logger, sink channels.Sink, account string, verify func(url.Values) ([]byte, error)) {
	echo, err := verify(r.URL.Query())
	if err != nil {
		Refuse(w, r, log, sink, account, "wecom callback", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(echo)
}

// Refuse answers a refused callback and, when the request failed one of
// the checks (not a failed Accept), records which one for the console.
func Refuse(w http.ResponseWriter, r *http.Request, log *slog.Logger, sink channels.Sink, account, what string, err error) {
	channels.RefuseRecorded(w, r, log, what, err, sink, ChannelName, account)
}

// MediaTimeout bounds one attachment's download (an app's media/get, an
// AI bot's media URL), the gateway's own bound.
const MediaTimeout = 60 * time.Second
