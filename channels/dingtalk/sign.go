package dingtalk

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// Sign is DingTalk's robot signature: base64(HMAC-SHA256(key = appSecret,
// msg = timestamp + "\n" + appSecret)), timestamp in Unix milliseconds as
// sent in the `timestamp` header.
func Sign(appSecret, timestamp string) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte(timestamp + "\n" + appSecret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// proof is a verified callback's single-use proof (channels.Inbound.Nonce
// and NonceExpires); the zero proof claims nothing (Stream mode).
type proof struct {
	nonce   string
	expires time.Time
}

// verifyHeaders checks a callback's `sign` over its `timestamp` header, then
// the timestamp window. The signature comes first so that a forger cannot
// probe our clock. The signature does not cover the body (DingTalk's
// design): it proves the sender holds the app secret, not what it sent. So
// the pair is good for one message only: the proof it returns (a hash of
// the sign, valid while the timestamp is in the window) is claimed with
// the message by Sink.Accept, and another body with the same pair is a
// replay.
//
// Errors wrap ErrSignature or ErrStale.
func (r *robot) verifyHeaders(h http.Header) (proof, error) {
	ts, sign := h.Get("timestamp"), h.Get("sign")
	if ts == "" || sign == "" || !hmac.Equal([]byte(sign), []byte(Sign(r.cfg.AppSecret, ts))) {
		return proof{}, ErrSignature
	}
	signed, err := channels.VerifyTimestamp(ts, time.Millisecond, r.now(), r.window, ErrStale)
	if err != nil {
		return proof{}, err
	}
	// The timestamp alone would identify the pair as well (the sign is a
	// function of it); hashing the sign keeps the header itself out of
	// the database.
	sum := sha256.Sum256([]byte(sign))
	return proof{nonce: "sign:" + hex.EncodeToString(sum[:]), expires: signed.Add(r.window)}, nil
}
