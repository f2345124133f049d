package skills

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Headers that carry the caller's identity to a skill backend. The gateway
// sets them from the verified platform callback; the model cannot.
const (
	HeaderUserID    = "X-Hermes-User-Id"
	HeaderUserName  = "X-Hermes-User-Name" // percent-encoded (url.PathEscape): names are often Chinese
	HeaderChannel   = "X-Hermes-Channel"
	HeaderAccount   = "X-Hermes-Account"
	HeaderCorpID    = "X-Hermes-Corp-Id"
	HeaderChatID    = "X-Hermes-Chat-Id"
	HeaderTimestamp = "X-Hermes-Timestamp" // unix seconds
	HeaderSignature = "X-Hermes-Signature" // hex HMAC-SHA256, see SignIdentity
	HeaderRequestID = "X-Request-ID"       // Caller.TraceID, for correlating logs
)

// DefaultMaxSkew is how far a signed timestamp may be from the verifier's
// clock when VerifyIdentity is given no maxSkew.
const DefaultMaxSkew = 5 * time.Minute

// Errors VerifyIdentity returns; a backend answers all of them with 401.
var (
	ErrIdentityMissing = errors.New("identity headers missing")
	ErrIdentityInvalid = errors.New("identity signature invalid")
	ErrIdentityExpired = errors.New("identity timestamp outside the allowed skew")
)

// SignedIdentity is the part of the caller's identity covered by
// X-Hermes-Signature. The display name is deliberately not in it (it is
// informational and may change); backends must key on UserID.
type SignedIdentity struct {
	UserID    string
	Channel   string
	Account   string
	CorpID    string
	ChatID    string
	Timestamp int64 // unix seconds
}

// SignIdentity returns hex(HMAC-SHA256(key, "v1\n"+user+"\n"+channel+"\n"+
// account+"\n"+corp+"\n"+chat+"\n"+timestamp)). The "v1" prefix lets the
// string change later without a backend accepting the wrong version.
//
// The signature binds the identity to a time, not to one request: anyone
// who sees a request can replay the identity for up to the allowed skew, so
// backends must be reached over TLS or a private network.
func SignIdentity(key []byte, id SignedIdentity) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signingString(id)))
	return hex.EncodeToString(mac.Sum(nil))
}

func signingString(id SignedIdentity) string {
	return strings.Join([]string{"v1", id.UserID, id.Channel, id.Account, id.CorpID, id.ChatID,
		strconv.FormatInt(id.Timestamp, 10)}, "\n")
}

// VerifyIdentity checks the identity headers of a request signed by Hermes
// and returns the identity. maxSkew <= 0 means DefaultMaxSkew.
//
// Errors: ErrIdentityMissing (no user id, timestamp or signature),
// ErrIdentityExpired (timestamp too far from now), ErrIdentityInvalid
// (malformed, wrong signature, or empty key), each wrapped with detail.
func VerifyIdentity(r *http.Request, key []byte, now time.Time, maxSkew time.Duration) (SignedIdentity, error) {
	if len(key) == 0 {
		return SignedIdentity{}, fmt.Errorf("skills: verify identity: %w: empty key", ErrIdentityInvalid)
	}
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	h := r.Header
	id := SignedIdentity{
		UserID:  h.Get(HeaderUserID),
		Channel: h.Get(HeaderChannel),
		Account: h.Get(HeaderAccount),
		CorpID:  h.Get(HeaderCorpID),
		ChatID:  h.Get(HeaderChatID),
	}
	ts, sig := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id.UserID == "" || ts == "" || sig == "" {
		return SignedIdentity{}, fmt.Errorf("skills: verify identity: %w: need %s, %s and %s",
			ErrIdentityMissing, HeaderUserID, HeaderTimestamp, HeaderSignature)
	}
	var err error
	if id.Timestamp, err = strconv.ParseInt(ts, 10, 64); err != nil {
		return SignedIdentity{}, fmt.Errorf("skills: verify identity: %w: bad timestamp %q", ErrIdentityInvalid, ts)
	}
	if err := checkSignature(id, sig, key, now, maxSkew); err != nil {
		return SignedIdentity{}, fmt.Errorf("skills: verify identity: %w", err)
	}
	return id, nil
}

// checkSignature compares sig with the identity's signature, then the
// timestamp with now. Errors wrap ErrIdentityInvalid or ErrIdentityExpired.
func checkSignature(id SignedIdentity, sig string, key []byte, now time.Time, maxSkew time.Duration) error {
	got, err := hex.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("%w: signature is not hex", ErrIdentityInvalid)
	}
	want, _ := hex.DecodeString(SignIdentity(key, id))
	if !hmac.Equal(got, want) {
		return ErrIdentityInvalid
	}
	// Checked after the signature so an attacker learns nothing about the
	// clock from forged requests.
	if skew := now.Sub(time.Unix(id.Timestamp, 0)); skew > maxSkew || skew < -maxSkew {
		return fmt.Errorf("%w: off by %s", ErrIdentityExpired, skew)
	}
	return nil
}

// UserName returns the caller's display name from a request's headers, or ""
// when absent or malformed. It is not signed.
func UserName(r *http.Request) string {
	name, err := url.PathUnescape(r.Header.Get(HeaderUserName))
	if err != nil {
		return ""
	}
	return name
}

// setIdentityHeaders writes the caller's identity, signed when key is set.
// Values come from the platform; one with a control character would break
// the header block or make the signing string ambiguous, so it is refused.
func setIdentityHeaders(h http.Header, c Caller, now time.Time, key []byte) error {
	id := SignedIdentity{UserID: c.UserID, Channel: c.Channel, Account: c.Account,
		CorpID: c.CorpID, ChatID: c.ChatID, Timestamp: now.Unix()}
	for _, v := range []string{id.UserID, id.Channel, id.Account, id.CorpID, id.ChatID, c.TraceID} {
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("caller identity contains a control character")
		}
	}
	set := func(k, v string) {
		if v != "" {
			h.Set(k, v)
		}
	}
	set(HeaderUserID, id.UserID)
	set(HeaderUserName, url.PathEscape(c.Name))
	set(HeaderChannel, id.Channel)
	set(HeaderAccount, id.Account)
	set(HeaderCorpID, id.CorpID)
	set(HeaderChatID, id.ChatID)
	set(HeaderTimestamp, strconv.FormatInt(id.Timestamp, 10))
	set(HeaderRequestID, c.TraceID)
	if len(key) > 0 {
		h.Set(HeaderSignature, SignIdentity(key, id))
	}
	return nil
}
