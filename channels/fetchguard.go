package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// A URL that arrives inside a callback or a frame (an AI bot's media URL
// and response_url, a DingTalk session webhook) is fetched only from the
// platform's own hosts, never from an internal address: whoever can forge
// or replay such a message would otherwise aim Hermes at its own console,
// a metadata service or anything else on the inside, and read the answer
// back through the reply or through which error came back. FetchGuard is
// the one client every such fetch goes through. URLs from the operator's
// configuration (API base URLs) are not callback URLs and do not need it.

// ErrFetchRefused: a URL from a callback or frame names a scheme, host or
// address the guard does not fetch from. Callers wrap it in their ordinary
// failure (channels.ErrMediaRefused, channels.ErrPermanent) so the user
// hears the same sentence as for any failed fetch; the guard has logged
// and counted it already.
var ErrFetchRefused = errors.New("callback URL refused")

// maxFetchRedirects bounds the redirects one guarded request follows, each
// to an allowed host.
const maxFetchRedirects = 3

// FetchPolicy says where a guard fetches from.
type FetchPolicy struct {
	// Hosts are the host names (or IP literals) a URL may name, exact or
	// as "*.suffix" (any name under suffix, not suffix itself); see
	// ParseHostPatterns. Empty: none.
	Hosts []string
	// AllowPrivate also allows plain http and connections to internal
	// addresses (loopback, private, link-local, CGNAT): an on-prem
	// deployment or proxy, or a test's fake. Never by default.
	AllowPrivate bool
	// AllowAddrs are internal ranges the connected address may still be
	// in, without AllowPrivate's plain http and the rest of the inside:
	// a cloud whose own DNS answers the platform's storage host with an
	// address of its internal network. Empty: none.
	AllowAddrs []netip.Prefix
}

// FetchOptions are the guard's wiring.
type FetchOptions struct {
	// Log receives one line per refusal (scheme and host, never the
	// query). Default slog.Default().
	Log *slog.Logger
	// Refused is called once per refusal (a counter); may be nil.
	Refused func()
	// Resolve, when set, replaces DNS for host names (a test maps an
	// allowed name to 127.0.0.1 to play DNS rebinding); the connected
	// address is checked either way.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// FetchGuard makes HTTP clients that fetch only what its policy allows. It
// checks each request (the first and every redirect) for scheme and host,
// and each connection, at dial time, for the address actually connected,
// so a name that resolves (or rebinds) to an internal address is refused
// too. It never goes through HTTP(S)_PROXY: the address checked must be
// the one the bytes come from. It is safe for concurrent use.
type FetchGuard struct {
	exact        map[string]bool
	suffixes     []string // ".example.com"
	allowPrivate bool
	allowAddrs   []netip.Prefix
	log          *slog.Logger
	refused      func()
	resolve      func(ctx context.Context, host string) ([]netip.Addr, error)
	transport    *http.Transport
}

// NewFetchGuard builds the guard of p. Errors: a host pattern
// ParseHostPatterns refuses (a section validates them first, naming its
// key).
func NewFetchGuard(p FetchPolicy, opt FetchOptions) (*FetchGuard, error) {
	exact, suffixes, err := ParseHostPatterns(p.Hosts)
	if err != nil {
		return nil, err
	}
	g := &FetchGuard{exact: exact, suffixes: suffixes, allowPrivate: p.AllowPrivate, allowAddrs: p.AllowAddrs,
		log: opt.Log, refused: opt.Refused, resolve: opt.Resolve}
	if g.log == nil {
		g.log = slog.Default()
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	g.transport = &http.Transport{
		Proxy:                 nil, // see FetchGuard
		DialContext:           g.dialer(dialer),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return g, nil
}

// Client is an HTTP client through the guard. timeout bounds a whole
// request, body included (0: only the request's context does: a download
// that may take long is bounded by its caller). Errors of its requests
// wrap ErrFetchRefused for what the guard refused.
func (g *FetchGuard) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: guardedTransport{g},
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxFetchRedirects {
				return g.refuse(req.URL.Hostname(), fmt.Sprintf("more than %d redirects", maxFetchRedirects))
			}
			return nil // the transport checks the target like any request
		},
	}
}

// guardedTransport checks every request's URL before it is sent: the
// first one and each redirect's target.
type guardedTransport struct{ g *FetchGuard }

func (t guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.g.Check(req.URL); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	return t.g.transport.RoundTrip(req)
}

// Check reports whether u may be fetched: https (or http with
// AllowPrivate), no credentials, and a host the policy names. Refusals
// are logged and counted, and wrap ErrFetchRefused. The address the name
// resolves to is checked when the connection is made.
func (g *FetchGuard) Check(u *url.URL) error {
	if u == nil {
		return g.refuse("", "no URL")
	}
	switch {
	case u.Scheme == "https", u.Scheme == "http" && g.allowPrivate:
	default:
		return g.refuse(u.Hostname(), fmt.Sprintf("scheme %q", u.Scheme))
	}
	if u.User != nil {
		return g.refuse(u.Hostname(), "credentials in the URL")
	}
	if !g.allowedHost(u.Hostname()) {
		return g.refuse(u.Hostname(), "host not allowed")
	}
	return nil
}

// allowedHost matches host against the policy's names: case-insensitive,
// an IP literal by its address.
func (g *FetchGuard) allowedHost(host string) bool {
	h := normalHost(host)
	if h == "" {
		return false
	}
	if g.exact[h] {
		return true
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return false // an address matches only itself, never a suffix
	}
	for _, s := range g.suffixes {
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

// dialer dials through d (whose Control checks the address), resolving
// names with g.resolve when set.
func (g *FetchGuard) dialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if g.resolve == nil {
			return d.DialContext(ctx, network, addr)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, addr)
		}
		ips, err := g.resolve(ctx, host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("resolve %s: no address", host)
		}
		var first error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			if first == nil {
				first = err
			}
		}
		return nil, first
	}
}

// control is the dialer's check of the address about to be connected
// (after DNS, before connect): internal addresses are refused unless the
// policy allows them.
func (g *FetchGuard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return g.refuse(address, "unparsable address")
	}
	if g.allowPrivate {
		return nil
	}
	a := ap.Addr().WithZone("").Unmap()
	for _, p := range g.allowAddrs {
		if p.Contains(a) {
			return nil
		}
	}
	if why := InternalAddr(a); why != "" {
		return g.refuse(a.String(), "connected address is "+why)
	}
	return nil
}

// refuse logs and counts one refusal and returns it as an error. host is
// a name or an address, never a URL: a query may be a credential.
func (g *FetchGuard) refuse(host, why string) error {
	g.log.Warn("a URL from a callback or frame was refused: Hermes fetches only from the platform's hosts",
		"host", host, "reason", why)
	if g.refused != nil {
		g.refused()
	}
	return fmt.Errorf("%w: %s (%s)", ErrFetchRefused, why, host)
}

// Ranges that IsPrivate, IsLoopback and the link-local and multicast
// checks of netip do not cover but that are internal all the same.
var internalPrefixes = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},          // RFC 1122: "this host on this network"
	{netip.MustParsePrefix("100.64.0.0/10"), "CGNAT"},             // RFC 6598 shared address space
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF reserved"},      // RFC 6890 (192.0.0.192: Oracle Cloud's metadata)
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},      // RFC 2544
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},            // RFC 1112, and 255.255.255.255
	{netip.MustParsePrefix("fec0::/10"), "site-local"},            // RFC 3879, deprecated but routed by some
	{netip.MustParsePrefix("100::/64"), "discard"},                // RFC 6666
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},     // RFC 3849
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local NAT64"},      // RFC 8215
	{netip.MustParsePrefix("2002::/16"), "6to4"},                  // RFC 3056: embeds an IPv4 address
	{netip.MustParsePrefix("2001::/32"), "Teredo"},                // RFC 4380: embeds an IPv4 address
	{netip.MustParsePrefix("::/96"), "IPv4-compatible IPv6"},      // deprecated, embeds an IPv4 address
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated"}, // RFC 2765 SIIT
}

// nat64 is the well-known NAT64 prefix (RFC 6052): its last 32 bits are an
// IPv4 address, judged as that address.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// InternalAddr says why a is not a public unicast address ("loopback",
// "private", "link-local" (169.254.169.254, the metadata services' address,
// and fe80::/10), "CGNAT", ...), or "" when it is one. IPv4-mapped IPv6
// (::ffff:a.b.c.d) and NAT64 addresses are judged by their IPv4 address;
// unique-local IPv6 (fc00::/7, with AWS's metadata fd00:ec2::254) is
// private.
func InternalAddr(a netip.Addr) string {
	a = a.WithZone("").Unmap()
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		return InternalAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, p := range internalPrefixes {
		if p.p.Contains(a) {
			return p.why
		}
	}
	return ""
}

// FetchGuard is the guard of account's callback URLs on channel: its
// refusals are logged on log (with the channel and account) and counted
// through env.FetchRefused. Errors: see NewFetchGuard.
func (env Env) FetchGuard(channel, account string, p FetchPolicy, log *slog.Logger) (*FetchGuard, error) {
	if log == nil {
		log = slog.Default()
	}
	return NewFetchGuard(p, FetchOptions{Log: log, Refused: func() {
		if env.FetchRefused != nil {
			env.FetchRefused(channel, account)
		}
	}})
}

// ParseHostPatterns checks host patterns from the configuration and
// returns the exact names (and addresses) and the "*.suffix" suffixes
// (with their leading dot), lower-cased. A pattern is a host name, an IP
// address, or "*." followed by a name of at least two labels ("*.qq.com",
// never "*.com"); no scheme, port, path or other wildcard. Errors name the
// first bad pattern by its index.
func ParseHostPatterns(patterns []string) (exact map[string]bool, suffixes []string, err error) {
	exact = map[string]bool{}
	for i, raw := range patterns {
		p := normalHost(strings.TrimSpace(raw))
		if rest, ok := strings.CutPrefix(p, "*."); ok {
			if !validHostName(rest) || !strings.Contains(rest, ".") {
				return nil, nil, fmt.Errorf("[%d]: %q: a wildcard must be \"*.\" and a name of two labels or more, like \"*.example.com\"", i, raw)
			}
			suffixes = append(suffixes, "."+rest)
			continue
		}
		if a, err := netip.ParseAddr(strings.Trim(p, "[]")); err == nil {
			exact[a.Unmap().String()] = true
			continue
		}
		if !validHostName(p) {
			return nil, nil, fmt.Errorf("[%d]: %q is not a host name, an IP address or \"*.suffix\" (no scheme, port or path)", i, raw)
		}
		exact[p] = true
	}
	return exact, suffixes, nil
}

// ParseAddrRanges parses address ranges from the configuration: CIDR
// prefixes ("169.254.0.0/16") or single addresses. Errors name the first
// bad one by its index.
func ParseAddrRanges(ranges []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, raw := range ranges {
		r := strings.TrimSpace(raw)
		if p, err := netip.ParsePrefix(r); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(r)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %q is not an address or a CIDR prefix", i, raw)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// normalHost is a URL's host as the allow-list knows it: lower case,
// without a trailing dot or brackets, an address in its canonical form.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return a.WithZone("").Unmap().String()
	}
	return h
}

// validHostName: labels of letters, digits and '-', none empty or over 63
// bytes, not starting or ending with '-'; 253 bytes at most.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
