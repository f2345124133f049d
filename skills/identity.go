package skills

import (
	"crypto/hmac"
	"crypto/rand"
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
	HeaderNonce     = "X-Hermes-Nonce"     // random, unique per request: a backend refuses one it has seen
	HeaderAudience  = "X-Hermes-Audience"  // the skill name the request was signed for (informative: verifiers use their own)
	HeaderSignature = "X-Hermes-Signature" // hex HMAC-SHA256 of SignedRequest.StringToSign
	HeaderRequestID = "X-Request-ID"       // Caller.TraceID, for correlating logs
)

// SignatureVersion opens every string Hermes signs for a request. A new
// format gets a new tag, so a backend never accepts a signature made for
// another version (v1 covered only the identity and a time).
const SignatureVersion = "HERMES-HMAC-SHA256-v2"

// Methods signed for executors that send no HTTP request.
const (
	SignedMethodExec = "EXEC" // command skills: Path is the program, the body is stdin
	SignedMethodMCP  = "MCP"  // MCP _meta: Path is the tool, the body the canonical arguments
)

// DefaultMaxSkew is how far a signed timestamp may be from the verifier's
// clock when no maxSkew is given.
const DefaultMaxSkew = 5 * time.Minute

// Errors the verifiers return; a backend answers all of them with 401.
var (
	ErrIdentityMissing = errors.New("identity headers missing")
	ErrIdentityInvalid = errors.New("identity signature invalid")
	ErrIdentityExpired = errors.New("identity timestamp outside the allowed skew")
	ErrReplayed        = errors.New("identity nonce already used")
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

// SignedRequest is everything X-Hermes-Signature covers: one request to one
// skill, for one caller, at one time. Changing any field (another path,
// another body, another skill, the same request again) breaks the
// signature or, for the nonce, the verifier's replay check.
type SignedRequest struct {
	Method     string // upper case as sent (POST); SignedMethodExec or SignedMethodMCP otherwise
	Host       string // the Host header as sent (hr.example.com:8443); empty for command and MCP _meta
	Path       string // the escaped path as sent (/api/tickets/INC-1/status); the program or tool otherwise
	Query      string // the raw query as sent, without "?"; empty when there is none
	BodySHA256 string // lower-case hex SHA-256 of the exact body bytes (of nothing, when there is no body)
	Nonce      string // random per request (32 hex digits)
	Audience   string // the skill name
	Identity   SignedIdentity
}

// StringToSign returns the exact bytes Hermes signs: these fields joined by
// "\n", without a trailing newline:
//
//	HERMES-HMAC-SHA256-v2, method, host, path, query, body SHA-256 (hex),
//	nonce, audience, timestamp, user id, channel, account, corp id, chat id
//
// No field can hold a newline: URLs cannot, and identity values with
// control characters are refused before signing.
func (s SignedRequest) StringToSign() string {
	id := s.Identity
	return strings.Join([]string{SignatureVersion, s.Method, s.Host, s.Path, s.Query, s.BodySHA256, s.Nonce,
		s.Audience, strconv.FormatInt(id.Timestamp, 10), id.UserID, id.Channel, id.Account, id.CorpID, id.ChatID}, "\n")
}

// Sign returns hex(HMAC-SHA256(key, s.StringToSign())).
func (s SignedRequest) Sign(key []byte) string {
	return hex.EncodeToString(s.mac(key))
}

func (s SignedRequest) mac(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s.StringToSign()))
	return m.Sum(nil)
}

// BodySHA256 is the lower-case hex SHA-256 of body, as signed.
func BodySHA256(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// newNonce returns 128 random bits in hex.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
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

// signRequest is how an executor signs one outgoing request: the call's
// caller, skill and key, the request's own method, target and body, a fresh
// nonce and the time now.
func (inv *invocation) signRequest(now time.Time, method, host, path, query string, body []byte) SignedRequest {
	c := inv.caller
	return SignedRequest{Method: method, Host: host, Path: path, Query: query, BodySHA256: BodySHA256(body),
		Nonce: newNonce(), Audience: inv.skill.Name, Identity: SignedIdentity{UserID: c.UserID, Channel: c.Channel,
			Account: c.Account, CorpID: c.CorpID, ChatID: c.ChatID, Timestamp: now.Unix()}}
}

// setIdentityHeaders writes the caller's identity for the request sr
// describes, signed when key is set. Values come from the platform; one
// with a control character would break the header block or make the
// signed string ambiguous, so it is refused.
func setIdentityHeaders(h http.Header, c Caller, sr SignedRequest, key []byte) error {
	if err := checkCaller(c); err != nil {
		return err
	}
	id := sr.Identity
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
	set(HeaderNonce, sr.Nonce)
	set(HeaderAudience, sr.Audience)
	set(HeaderRequestID, c.TraceID)
	if len(key) > 0 {
		h.Set(HeaderSignature, sr.Sign(key))
	}
	return nil
}

// checkCaller refuses identity values with control characters: they would
// break a header block or make the signed string ambiguous.
func checkCaller(c Caller) error {
	for _, v := range []string{c.UserID, c.Channel, c.Account, c.CorpID, c.ChatID, c.TraceID} {
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("caller identity contains a control character")
		}
	}
	return nil
}
