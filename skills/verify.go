package skills

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// VerifyOptions say what a backend expects of a signed request.
type VerifyOptions struct {
	// Audience is the skill this endpoint serves (its name): a request
	// signed for another skill is refused. Required.
	Audience string
	// Host is the host clients address, when a proxy rewrites Host;
	// empty: r.Host.
	Host string
	// Now is the verifier's time.
	Now time.Time
	// MaxSkew is how far the signed timestamp may be from Now, default
	// DefaultMaxSkew.
	MaxSkew time.Duration
	// Nonces remembers the nonces seen within the window and refuses a
	// second use. Nil: no replay check (only for tests of the signature).
	Nonces *NonceCache
}

// VerifyRequest checks that r, with the body the backend read from it,
// is exactly the request Hermes signed for opts.Audience: method, host,
// path, query, body, nonce, audience, time and identity. It returns the
// signed identity.
//
// Errors: ErrIdentityMissing (a header missing), ErrIdentityInvalid (any
// change to what was signed, a wrong key or audience, an empty key),
// ErrIdentityExpired (timestamp outside the skew), ErrReplayed (nonce seen).
func VerifyRequest(r *http.Request, body, key []byte, opts VerifyOptions) (SignedIdentity, error) {
	h := r.Header.Get
	ts, err := strconv.ParseInt(h(HeaderTimestamp), 10, 64)
	if h(HeaderUserID) == "" || h(HeaderNonce) == "" || h(HeaderSignature) == "" || err != nil {
		return SignedIdentity{}, fmt.Errorf("skills: verify request: %w: need %s, %s, %s and %s",
			ErrIdentityMissing, HeaderUserID, HeaderTimestamp, HeaderNonce, HeaderSignature)
	}
	sr := SignedRequest{Method: r.Method, Host: cmp.Or(opts.Host, r.Host), Path: r.URL.EscapedPath(),
		Query: r.URL.RawQuery, BodySHA256: BodySHA256(body), Nonce: h(HeaderNonce), Audience: opts.Audience,
		Identity: SignedIdentity{UserID: h(HeaderUserID), Channel: h(HeaderChannel), Account: h(HeaderAccount),
			CorpID: h(HeaderCorpID), ChatID: h(HeaderChatID), Timestamp: ts}}
	if err := sr.verify(key, h(HeaderSignature), opts); err != nil {
		return SignedIdentity{}, fmt.Errorf("skills: verify request: %w", err)
	}
	return sr.Identity, nil
}

// verify compares sig with the request's signature, then the time, then
// the nonce. Checking the signature first means a forger learns nothing
// about the clock or the nonces seen.
func (s SignedRequest) verify(key []byte, sig string, opts VerifyOptions) error {
	got, err := hex.DecodeString(sig)
	if len(key) == 0 || opts.Audience == "" || err != nil || !hmac.Equal(got, s.mac(key)) {
		return ErrIdentityInvalid
	}
	maxSkew := cmp.Or(opts.MaxSkew, DefaultMaxSkew)
	signed := time.Unix(s.Identity.Timestamp, 0)
	if skew := opts.Now.Sub(signed); skew > maxSkew || skew < -maxSkew {
		return fmt.Errorf("%w: off by %s", ErrIdentityExpired, skew)
	}
	if opts.Nonces != nil && !opts.Nonces.Use(s.Nonce, signed.Add(maxSkew), opts.Now) {
		return ErrReplayed
	}
	return nil
}

// NonceCache remembers nonces until their signature expires, so a replayed
// request is refused while its timestamp would still pass. Safe for
// concurrent use; one per backend process (replicas behind a load balancer
// need a shared store, e.g. Redis SET NX EX, with the same rule).
type NonceCache struct {
	mu   sync.Mutex
	seen map[string]time.Time // nonce → when it may be forgotten
}

// NewNonceCache returns an empty cache.
func NewNonceCache() *NonceCache { return &NonceCache{seen: map[string]time.Time{}} }

// Use records nonce until expires and reports whether it was new. Entries
// that expired by now are dropped first.
func (c *NonceCache) Use(nonce string, expires, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, exp := range c.seen {
		if !exp.After(now) {
			delete(c.seen, n)
		}
	}
	if _, dup := c.seen[nonce]; dup {
		return false
	}
	c.seen[nonce] = expires
	return true
}

// MetaCaller is the value of _meta["hermes/caller"] on every tools/call
// Hermes sends. Signature covers a SignedRequest with Method
// SignedMethodMCP, Path the tool name, an empty host and query, and the
// SHA-256 of the canonical arguments (CanonicalArguments); empty when the
// skill signs nothing.
type MetaCaller struct {
	UserID    string `json:"user_id"`
	UserName  string `json:"user_name,omitempty"` // not signed
	Channel   string `json:"channel,omitempty"`
	Account   string `json:"account,omitempty"`
	CorpID    string `json:"corp_id,omitempty"`
	ChatID    string `json:"chat_id,omitempty"`
	Timestamp int64  `json:"timestamp"`
	Nonce     string `json:"nonce,omitempty"`
	Audience  string `json:"audience,omitempty"`
	Signature string `json:"signature,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// CanonicalArguments is the form of MCP tool arguments that is signed: the
// top-level object with keys sorted and values compacted. Client and server
// both compute it from what they hold, so re-encoding on the way (key
// order, spaces) does not break the signature. Errors: args is not a JSON
// object (empty counts as {}).
func CanonicalArguments(args json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return json.Marshal(m)
}

// VerifyMeta checks the signed caller in an MCP request's _meta against
// the tool called and its arguments (for MCP servers written in Go) and
// returns the identity. Errors are VerifyRequest's.
func VerifyMeta(meta map[string]any, tool string, args json.RawMessage, key []byte, opts VerifyOptions) (SignedIdentity, error) {
	raw, _ := json.Marshal(meta[MetaKeyCaller])
	var mc MetaCaller
	if err := json.Unmarshal(raw, &mc); err != nil || mc.UserID == "" || mc.Signature == "" || mc.Nonce == "" {
		return SignedIdentity{}, fmt.Errorf("skills: verify meta: %w: need %s with user_id, nonce and signature", ErrIdentityMissing, MetaKeyCaller)
	}
	canonical, err := CanonicalArguments(args)
	if err != nil {
		return SignedIdentity{}, fmt.Errorf("skills: verify meta: %w: arguments are not an object", ErrIdentityInvalid)
	}
	sr := SignedRequest{Method: SignedMethodMCP, Path: tool, BodySHA256: BodySHA256(canonical), Nonce: mc.Nonce,
		Audience: opts.Audience, Identity: SignedIdentity{UserID: mc.UserID, Channel: mc.Channel, Account: mc.Account,
			CorpID: mc.CorpID, ChatID: mc.ChatID, Timestamp: mc.Timestamp}}
	if err := sr.verify(key, mc.Signature, opts); err != nil {
		return SignedIdentity{}, fmt.Errorf("skills: verify meta: %w", err)
	}
	return sr.Identity, nil
}
