package skills

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// AsyncRegistrar hands out callback URLs for async skills. The gateway
// implements it: Begin records that caller c started skill (with c.Origin,
// so the later result reaches the right conversation) and returns an
// unguessable URL on the gateway that accepts one AsyncCallback.
//
// Begin is called once per call, before the first attempt; an error fails
// the call with ErrUnavailable and nothing is sent.
type AsyncRegistrar interface {
	Begin(ctx context.Context, c Caller, skill string) (callbackURL string, err error)
	// Accepted records the task id the backend's 202 named for the call
	// that got callbackURL, before the call returns: the callback must
	// then report that task and no other. An error changes
	// nothing: the call succeeded, the error is logged.
	Accepted(ctx context.Context, callbackURL, taskID string) error
}

// Outcomes an AsyncCallback reports.
const (
	AsyncSucceeded = "succeeded"
	AsyncFailed    = "failed"
)

// AsyncCallback is the body a backend POSTs to X-Hermes-Callback-URL when
// accepted work (HTTP 202 {"task_id": ...}) is done:
//
//	{"task_id": "VPN-1001", "status": "succeeded", "result": {...}, "message": "已开通 VPN 权限 7 天"}
//
// Message is a line for the user; Result is any JSON the agent may render.
type AsyncCallback struct {
	TaskID  string          `json:"task_id"`
	Status  string          `json:"status"` // AsyncSucceeded or AsyncFailed
	Result  json.RawMessage `json:"result,omitempty"`
	Message string          `json:"message,omitempty"`
}

// MaxCallbackBytes bounds a callback body.
const MaxCallbackBytes = 256 << 10

// ErrCallbackMalformed is returned for a callback body that is not an
// AsyncCallback.
var ErrCallbackMalformed = errors.New("malformed async callback")

// DecodeCallback parses and checks a callback body. Errors wrap
// ErrCallbackMalformed.
func DecodeCallback(body []byte) (AsyncCallback, error) {
	var cb AsyncCallback
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cb); err != nil {
		return AsyncCallback{}, fmt.Errorf("skills: %w: %v", ErrCallbackMalformed, err)
	}
	if cb.Status != AsyncSucceeded && cb.Status != AsyncFailed {
		return AsyncCallback{}, fmt.Errorf("skills: %w: status %q (want %s or %s)", ErrCallbackMalformed, cb.Status, AsyncSucceeded, AsyncFailed)
	}
	return cb, nil
}

// CallbackSignatureVersion opens the string a backend signs for a
// callback; distinct from SignatureVersion so that neither signature can
// ever pass as the other.
const CallbackSignatureVersion = "HERMES-HMAC-SHA256-v2-callback"

// CallbackStringToSign is the exact bytes a callback signature covers:
// the version, the callback token (the last path segment of
// X-Hermes-Callback-URL), the timestamp and the body's SHA-256 (hex),
// joined by "\n". Covering the token binds the result to the one call it
// answers: it cannot be posted to another call's URL.
func CallbackStringToSign(token string, timestamp int64, body []byte) string {
	return strings.Join([]string{CallbackSignatureVersion, token, strconv.FormatInt(timestamp, 10), BodySHA256(body)}, "\n")
}

// SignCallback returns hex(HMAC-SHA256(key, CallbackStringToSign(...))),
// sent as X-Hermes-Signature with X-Hermes-Timestamp. The key is the
// skill's identity key.
func SignCallback(key []byte, token string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(CallbackStringToSign(token, timestamp, body)))
	return hex.EncodeToString(mac.Sum(nil))
}

// CallbackToken is the token of a callback URL: its last path segment.
// Errors: the URL does not parse, or its path is empty.
func CallbackToken(callbackURL string) (string, error) {
	u, err := url.Parse(callbackURL)
	if err != nil {
		return "", err
	}
	token := path.Base(u.EscapedPath())
	if token == "" || token == "/" || token == "." {
		return "", fmt.Errorf("callback URL %q has no token", callbackURL)
	}
	return token, nil
}

// NewCallbackRequest builds the POST a backend sends to a callback URL,
// signed with key when it is not empty. For backends written in Go (the
// demo backend uses it).
func NewCallbackRequest(ctx context.Context, callbackURL string, cb AsyncCallback, key []byte, now time.Time) (*http.Request, error) {
	body, err := json.Marshal(cb)
	if err != nil {
		return nil, err
	}
	token, err := CallbackToken(callbackURL)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, callbackURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if len(key) > 0 {
		ts := now.Unix()
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(HeaderSignature, SignCallback(key, token, ts, body))
	}
	return req, nil
}

// VerifyCallback reads a callback request (at most MaxCallbackBytes) posted
// to the URL holding token, checks its signature and time against key, and
// decodes it. maxSkew <= 0 means DefaultMaxSkew. Errors: ErrIdentityMissing,
// ErrIdentityInvalid or ErrIdentityExpired for the signature,
// ErrCallbackMalformed for the body.
func VerifyCallback(r *http.Request, token string, key []byte, now time.Time, maxSkew time.Duration) (AsyncCallback, error) {
	if len(key) == 0 {
		return AsyncCallback{}, fmt.Errorf("skills: verify callback: %w: empty key", ErrIdentityInvalid)
	}
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxCallbackBytes+1))
	if err != nil || len(body) > MaxCallbackBytes {
		return AsyncCallback{}, fmt.Errorf("skills: verify callback: %w: body unreadable or over %d bytes", ErrCallbackMalformed, MaxCallbackBytes)
	}
	ts, sig := r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature)
	if ts == "" || sig == "" {
		return AsyncCallback{}, fmt.Errorf("skills: verify callback: %w: need %s and %s", ErrIdentityMissing, HeaderTimestamp, HeaderSignature)
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return AsyncCallback{}, fmt.Errorf("skills: verify callback: %w: bad timestamp %q", ErrIdentityInvalid, ts)
	}
	got, err := hex.DecodeString(sig)
	want, _ := hex.DecodeString(SignCallback(key, token, t, body))
	if err != nil || !hmac.Equal(got, want) {
		return AsyncCallback{}, fmt.Errorf("skills: verify callback: %w", ErrIdentityInvalid)
	}
	if skew := now.Sub(time.Unix(t, 0)); skew > maxSkew || skew < -maxSkew {
		return AsyncCallback{}, fmt.Errorf("skills: verify callback: %w: off by %s", ErrIdentityExpired, skew)
	}
	return DecodeCallback(body)
}

// CallbackKey returns the key skill's backend signs callbacks with (its
// identity key), or nil when the skill signs nothing; then the callback
// URL's secrecy is the only protection. Errors: ErrUnknownSkill, or
// ErrMisconfigured when the key's variable or file is missing.
func (r *Registry) CallbackKey(skill string) ([]byte, error) {
	s, ok := r.byName[skill]
	if !ok {
		return nil, fmt.Errorf("skill %s %w", skill, ErrUnknownSkill)
	}
	field, env, file := r.hmacKeySource(s)
	if env == "" && file == "" {
		return nil, nil
	}
	key, err := r.readSecret(env, file)
	if err != nil {
		return nil, fmt.Errorf("skill %s %w: %s: %s", s.Name, ErrMisconfigured, field, err)
	}
	return []byte(key), nil
}
