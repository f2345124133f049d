package console

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"time"

	"github.com/hermes-gw/hermes/gateway/store"
)

// Login throttling. Every attempt is counted in Postgres (shared by the
// replicas) under the counters' row locks before its password is checked,
// so parallel guesses are counted as they come, not after bcrypt. Three
// counters see each attempt:
//
//   - the pair (address, username): one guesser on one account. Steep: after
//     5 failures each attempt waits 2 s, 4 s, 8 s ... since the last failure,
//     up to 15 minutes.
//   - the address, over every username (one guesser spraying accounts): the
//     same curve after 20 failures, higher because one address may be a NAT
//     or proxy that many people share.
//   - the account, from every address (a guesser with many addresses): after
//     10 failures 1 s, 2 s ... but at most a minute.
//
// No counter is a lockout. A stranger's failures slow only the stranger's
// own pair and address; the account-wide delay is what a stranger can push
// onto the real admin, so it is capped at a minute and does not apply at
// all to an address the account has signed in from in the last 30 days:
// the admin at their usual address signs in at once while a stranger
// hammers the account from elsewhere. A refused attempt (429) is not
// counted, so hammering a refused counter does not make it worse. A
// successful login takes its own attempt back and clears its pair. A
// counter without a failure for a day starts from zero again.
var loginBackoff = map[string]backoff{
	store.LoginScopePair:    {free: 5, base: 2 * time.Second, max: 15 * time.Minute},
	store.LoginScopeAddr:    {free: 20, base: 2 * time.Second, max: 15 * time.Minute},
	store.LoginScopeAccount: {free: 10, base: time.Second, max: time.Minute},
}

const (
	// loginForget is how long a counter keeps failures without a new one.
	loginForget = 24 * time.Hour
	// knownAddressFor is how long an address the account signed in from is
	// exempt from the account-wide delay.
	knownAddressFor = 30 * 24 * time.Hour
	// ipv6Prefix: one IPv6 client usually holds a whole /64, so it is
	// counted as one address.
	ipv6Prefix = 64
)

// backoff is one counter's curve: after free failures, each attempt waits
// base·2^(failures-free) since the last failure, at most max.
type backoff struct {
	free      int
	base, max time.Duration
}

// delay is how long after the last failure an attempt may come, with
// failures counted.
func (b backoff) delay(failures int) time.Duration {
	if failures < b.free {
		return 0
	}
	steps := failures - b.free
	if steps >= 62 || float64(b.base)*math.Exp2(float64(steps)) >= float64(b.max) {
		return b.max
	}
	return b.base << steps
}

// loginKeys are the counters an attempt on user from addr touches; a name
// that cannot be an account is counted on the address only. The pair is
// returned too (nil for such a name): a success clears it.
func loginKeys(addr, user string) ([]store.LoginKey, *store.LoginKey) {
	keys := []store.LoginKey{{Scope: store.LoginScopeAddr, Key: addr}}
	if !usernameRE.MatchString(user) {
		return keys, nil
	}
	pair := store.LoginKey{Scope: store.LoginScopePair, Key: addr + " " + user} // usernames hold no space
	return append(keys, store.LoginKey{Scope: store.LoginScopeAccount, Key: user}, pair), &pair
}

// loginWait is how long an attempt must still wait given its counters (in
// any order): the longest delay not yet over, zero when it may go ahead.
func loginWait(counters []store.LoginCounter, now time.Time) time.Duration {
	known := false
	for _, c := range counters {
		if c.Scope == store.LoginScopePair && !c.LastSuccess.IsZero() && now.Sub(c.LastSuccess) < knownAddressFor {
			known = true
		}
	}
	var wait time.Duration
	for _, c := range counters {
		if c.Scope == store.LoginScopeAccount && known {
			continue
		}
		if c.LastFailure.IsZero() {
			continue
		}
		wait = max(wait, c.LastFailure.Add(loginBackoff[c.Scope].delay(c.Failures)).Sub(now))
	}
	return wait
}

// beginAttempt counts an attempt on keys, or returns how long it must wait
// (nothing is counted then).
func (c *Console) beginAttempt(ctx context.Context, keys []store.LoginKey, now time.Time) (time.Duration, error) {
	wait, err := c.deps.Store.BeginLoginAttempt(ctx, keys, now, now.Add(-loginForget),
		func(counters []store.LoginCounter) time.Duration { return loginWait(counters, now) })
	if err != nil || wait > 0 {
		return wait, err
	}
	// Counters idle for a day go; a failed cleanup costs nothing now.
	if err := c.deps.Store.ForgetLoginCounters(ctx, now.Add(-loginForget), now.Add(-knownAddressFor)); err != nil {
		c.deps.Logger.Warn("console: forget login counters", "err", err)
	}
	return 0, nil
}

// retryAfter is wait in whole seconds for the Retry-After header, at
// least 1.
func retryAfter(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}

// waitText is "in how long" in the text t: seconds up to two minutes, then
// minutes, rounded up.
func waitText(t map[string]string, wait time.Duration) string {
	s := retryAfter(wait)
	if s <= 120 {
		return fmt.Sprintf(t["n_seconds"], s)
	}
	return fmt.Sprintf(t["n_minutes"], (s+59)/60)
}

// clientAddr is the address a login is counted on: the TCP peer, an IPv6
// peer by its /64. Forwarded headers are not trusted: anyone could set them
// to dodge the limits. Behind a reverse proxy every client is the proxy, so
// serve the console on server.admin_listen and reach it directly.
func clientAddr(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(ipv6Prefix)
		return p.String()
	}
	return a.String()
}
