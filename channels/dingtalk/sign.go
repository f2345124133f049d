package dingtalk

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Sign is DingTalk's robot signature: base64(HMAC-SHA256(key = appSecret,
// msg = timestamp + "\n" + appSecret)), timestamp in Unix milliseconds as
// sent in the `timestamp` header.
func Sign(appSecret, timestamp string) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte(timestamp + "\n" + appSecret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// verifyHeaders checks a callback's `sign` over its `timestamp` header, then
// the timestamp window. The signature comes first so that a forger cannot
// probe our clock. The signature does not cover the body (DingTalk's
// design): it proves the sender holds the app secret, and the window bounds
// replays.
//
// Errors wrap ErrSignature or ErrStale.
func (r *robot) verifyHeaders(h http.Header) error {
	ts, sign := h.Get("timestamp"), h.Get("sign")
	if ts == "" || sign == "" || !hmac.Equal([]byte(sign), []byte(Sign(r.cfg.AppSecret, ts))) {
		return ErrSignature
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q is not Unix milliseconds", ErrStale, ts)
	}
	if d := r.now().Sub(time.UnixMilli(ms)); d > r.window || d < -r.window {
		return fmt.Errorf("%w: timestamp %d is %s from now, window %s", ErrStale, ms, d.Round(time.Second), r.window)
	}
	return nil
}
