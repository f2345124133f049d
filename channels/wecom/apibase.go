package wecom

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/silenceper/wechat/v2/util"

	"github.com/hermes-gw/hermes/channels"
)

// This file is the one place Hermes touches silenceper/wechat's process-wide
// state. silenceper builds every WeCom URL from the constant
// https://qyapi.weixin.qq.com and sends it with util.DefaultHTTPClient; the
// only hooks it offers are the global util.SetURIModifier and that global
// client. Private-cloud WeCom and the tests need a different base URL per app,
// so one modifier, installed once, looks the app up from the URL itself:
//   - gettoken URLs carry corpid= and corpsecret=, so app (corp id and
//     secret) → base URL, and corp id alone for a secret not registered;
//   - every other call carries access_token=, so token → base URL, learnt
//     when an app's token cache wrapper sees its token being Set or Got.
// URLs it cannot attribute are left alone. Nothing else in Hermes may call
// util.SetURIModifier: there is only one slot, and a second caller would
// silently replace this one.

// httpTimeout bounds one WeCom API call. silenceper's message API takes no
// context, so this is what stops a hung connection.
const httpTimeout = 10 * time.Second

// defaultAPIHost is the host silenceper writes into every WeCom URL.
const defaultAPIHost = "qyapi.weixin.qq.com"

// recentTokensPerApp is how many tokens per app stay mapped. A request may
// still carry the previous token while another goroutine or replica fetches
// a new one; older tokens are dead and dropped so the map stays small.
const recentTokensPerApp = 4

var (
	installOnce sync.Once
	apiBases    = newAPIBaseRegistry()
)

// installAPIBase installs the URI modifier and the HTTP client, once per
// process.
func installAPIBase() {
	installOnce.Do(func() {
		util.DefaultHTTPClient = &http.Client{Timeout: httpTimeout}
		util.SetURIModifier(apiBases.rewrite)
	})
}

// apiBaseRegistry maps what a silenceper URL carries to the base URL of the
// app that made it.
type apiBaseRegistry struct {
	mu     sync.RWMutex
	apps   map[string]string   // appRoute(corp id, secret) → base URL
	corps  map[string]string   // corp id → base URL
	tokens map[string]string   // access token → base URL
	recent map[string][]string // app key → its recent tokens, oldest first
}

func newAPIBaseRegistry() *apiBaseRegistry {
	return &apiBaseRegistry{
		apps:   map[string]string{},
		corps:  map[string]string{},
		tokens: map[string]string{},
		recent: map[string][]string{},
	}
}

// registerApp routes gettoken calls of the app with corpID and secret to
// base, and those of corpID with another secret too (a later registration
// replaces an earlier one). The secret tells apart two apps of one corp id
// with different bases: a private-cloud and a public one, or tests that
// each run a fake WeCom.
func (r *apiBaseRegistry) registerApp(corpID, secret, base string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.apps[appRoute(corpID, secret)] = base
	r.corps[corpID] = base
}

// appRoute is the key of an app's gettoken route: a digest, so that the
// registry holds no second copy of the secret.
func appRoute(corpID, secret string) string {
	sum := sha256.Sum256([]byte(corpID + "\x00" + secret))
	return string(sum[:])
}

// noteToken routes calls carrying token to base. appKey identifies the app
// so that only its last few tokens are kept.
func (r *apiBaseRegistry) noteToken(appKey, token, base string) {
	if token == "" {
		return
	}
	r.mu.RLock()
	known := r.tokens[token] == base
	r.mu.RUnlock()
	if known {
		return // the common case: every send Gets the same cached token
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens[token] = base
	list := r.recent[appKey]
	for i, t := range list {
		if t == token {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	list = append(list, token)
	for len(list) > recentTokensPerApp {
		delete(r.tokens, list[0])
		list = list[1:]
	}
	r.recent[appKey] = list
}

// rewrite is the URI modifier: it swaps scheme, host and path prefix of a
// WeCom API URL for the owning app's base URL.
func (r *apiBaseRegistry) rewrite(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Host != defaultAPIHost {
		return uri
	}
	q := u.Query()
	r.mu.RLock()
	var base string
	var ok bool
	if token := q.Get("access_token"); token != "" {
		base, ok = r.tokens[token]
	}
	if !ok {
		base, ok = r.apps[appRoute(q.Get("corpid"), q.Get("corpsecret"))]
	}
	if !ok {
		base, ok = r.corps[q.Get("corpid")]
	}
	r.mu.RUnlock()
	if !ok {
		return uri
	}
	out := base + u.EscapedPath()
	if u.RawQuery != "" {
		out += "?" + u.RawQuery
	}
	return out
}

// apiBaseURL is the one rule for an app's API base URL (the config's
// Validate and NewApp both call it): channels.ParseBaseURL over http(s),
// DefaultAPIBaseURL when empty.
func apiBaseURL(raw string) (string, error) {
	if raw == "" {
		raw = DefaultAPIBaseURL
	}
	return channels.ParseBaseURL(raw, "http", "https")
}

// parseAgentID is the one rule for an app's AgentId (the config's Validate
// and NewApp both call it): a decimal integer.
func parseAgentID(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("must be the app's AgentId, a decimal integer, got %q", s)
	}
	return n, nil
}
