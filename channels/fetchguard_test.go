package channels_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes-gw/hermes/channels"
)

// recorder is a listener that counts the connections and requests made
// to it: a URL the guard refuses must reach neither.
type recorder struct {
	srv         *httptest.Server
	conns, hits atomic.Int32
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		if h != nil {
			h(w, req)
			return
		}
		_, _ = io.WriteString(w, "inside")
	}))
	r.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	return r
}

// port is the recorder's port on 127.0.0.1.
func (r *recorder) port() string { return r.srv.URL[strings.LastIndex(r.srv.URL, ":")+1:] }

func (r *recorder) untouched(t *testing.T, name string) {
	t.Helper()
	if c, h := r.conns.Load(), r.hits.Load(); c != 0 || h != 0 {
		t.Errorf("%s: %d connections and %d requests reached it, want none", name, c, h)
	}
}

// guard builds a guard of p whose refusals count into n; resolve maps
// names to 127.0.0.1 when names is set (a name the attacker points at the
// inside, as DNS rebinding does).
func guard(t *testing.T, p channels.FetchPolicy, n *atomic.Int32, names ...string) *channels.FetchGuard {
	t.Helper()
	opt := channels.FetchOptions{Refused: func() { n.Add(1) }}
	if len(names) > 0 {
		opt.Resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
			for _, name := range names {
				if host == name {
					return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
				}
			}
			return nil, errors.New("no such host")
		}
	}
	g, err := channels.NewFetchGuard(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func get(c *http.Client, u string) error {
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

// TestFetchGuardRefusesHostsOutsideTheList: with the platform's hosts
// only, a URL naming 127.0.0.1, localhost, the metadata address or
// another name is refused before any connection, once each, counted.
func TestFetchGuardRefusesHostsOutsideTheList(t *testing.T) {
	rec := newRecorder(t, nil)
	var n atomic.Int32
	c := guard(t, channels.FetchPolicy{Hosts: []string{"qyapi.weixin.qq.com", "*.myqcloud.com"}}, &n).Client(0)
	urls := []string{
		"https://127.0.0.1:" + rec.port() + "/console",
		"http://127.0.0.1:" + rec.port() + "/console",
		"https://localhost:" + rec.port() + "/",
		"https://169.254.169.254/latest/meta-data/",
		"https://[::1]:" + rec.port() + "/",
		"https://[::ffff:127.0.0.1]:" + rec.port() + "/",
		"https://myqcloud.com/", // the suffix itself is not under it
		"https://qyapi.weixin.qq.com.evil.example/",
		"https://user:pw@qyapi.weixin.qq.com/",
		"ftp://qyapi.weixin.qq.com/",
		"http://qyapi.weixin.qq.com/", // https only by default
	}
	for i, u := range urls {
		if err := get(c, u); !errors.Is(err, channels.ErrFetchRefused) {
			t.Errorf("%s: err %v, want ErrFetchRefused", u, err)
		}
		if got := n.Load(); got != int32(i+1) {
			t.Errorf("%s: %d refusals counted, want %d", u, got, i+1)
		}
	}
	rec.untouched(t, "loopback listener")
}

// TestFetchGuardRefusesRedirectsOutside: an allowed host's 302 to a host
// outside the list, to 127.0.0.1 or to a name that is not listed is not
// followed; a redirect to an allowed host is.
func TestFetchGuardRefusesRedirectsOutside(t *testing.T) {
	inside := newRecorder(t, nil)
	var target atomic.Pointer[string]
	allowed := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/final" {
			_, _ = io.WriteString(w, "file")
			return
		}
		http.Redirect(w, r, *target.Load(), http.StatusFound)
	})
	var n atomic.Int32
	// files.example.test is the platform's host, served (in this test) on
	// loopback; fetch_allow_private lets the test reach it.
	g := guard(t, channels.FetchPolicy{Hosts: []string{"files.example.test", "*.cdn.example.test"}, AllowPrivate: true}, &n,
		"files.example.test", "a.cdn.example.test", "elsewhere.test")
	c := g.Client(0)
	start := "http://files.example.test:" + allowed.port() + "/start"
	for _, to := range []string{
		"http://127.0.0.1:" + inside.port() + "/console",
		"http://localhost:" + inside.port() + "/console",
		"http://elsewhere.test:" + inside.port() + "/console",
		"http://169.254.169.254/latest/meta-data/",
	} {
		target.Store(&to)
		before := n.Load()
		if err := get(c, start); !errors.Is(err, channels.ErrFetchRefused) {
			t.Errorf("302 to %s: err %v, want ErrFetchRefused", to, err)
		}
		if n.Load() != before+1 {
			t.Errorf("302 to %s: refusal not counted once", to)
		}
	}
	inside.untouched(t, "redirect target")
	ok := "http://a.cdn.example.test:" + allowed.port() + "/final"
	target.Store(&ok)
	if err := get(c, start); err != nil {
		t.Fatalf("302 to an allowed host: %v", err)
	}
}

// TestFetchGuardChecksTheConnectedAddress: an allowed name that resolves
// to 127.0.0.1 (DNS rebinding, or a record the attacker controls) is
// refused at dial time, before the connection is made.
func TestFetchGuardChecksTheConnectedAddress(t *testing.T) {
	rec := newRecorder(t, nil)
	var n atomic.Int32
	c := guard(t, channels.FetchPolicy{Hosts: []string{"media.example.test"}}, &n, "media.example.test").Client(0)
	err := get(c, "https://media.example.test:"+rec.port()+"/file")
	if !errors.Is(err, channels.ErrFetchRefused) {
		t.Fatalf("err %v, want ErrFetchRefused at dial time", err)
	}
	if n.Load() != 1 {
		t.Errorf("%d refusals counted, want 1", n.Load())
	}
	rec.untouched(t, "rebound name")

	// The same name with fetch_allow_private (an on-prem proxy) connects.
	var m atomic.Int32
	c = guard(t, channels.FetchPolicy{Hosts: []string{"media.example.test"}, AllowPrivate: true}, &m, "media.example.test").Client(0)
	if err := get(c, "http://media.example.test:"+rec.port()+"/file"); err != nil || m.Load() != 0 {
		t.Fatalf("allow_private: err %v, %d refusals", err, m.Load())
	}
}

// TestFetchGuardAllowsListedAddresses: an internal range named in
// AllowAddrs (a cloud's own DNS answering with its internal endpoint) is
// connected to, over https only; the rest of the inside stays refused.
func TestFetchGuardAllowsListedAddresses(t *testing.T) {
	rec := newRecorder(t, nil)
	ranges, err := channels.ParseAddrRanges([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	g := guard(t, channels.FetchPolicy{Hosts: []string{"media.example.test", "other.example.test"}, AllowAddrs: ranges}, &n, "media.example.test")
	// The recorder speaks plain http: the TLS handshake fails, but only
	// after the guard let the connection through.
	if err := get(g.Client(0), "https://media.example.test:"+rec.port()+"/file"); err == nil || errors.Is(err, channels.ErrFetchRefused) {
		t.Fatalf("err %v, want a TLS failure after connecting", err)
	}
	if rec.conns.Load() != 1 || n.Load() != 0 {
		t.Fatalf("%d connections, %d refusals; want 1 and 0", rec.conns.Load(), n.Load())
	}
	if err := get(g.Client(0), "http://media.example.test:"+rec.port()+"/file"); !errors.Is(err, channels.ErrFetchRefused) {
		t.Fatalf("plain http: err %v, want ErrFetchRefused", err)
	}
	ranges, _ = channels.ParseAddrRanges([]string{"10.0.0.0/8", "169.254.0.47"})
	g = guard(t, channels.FetchPolicy{Hosts: []string{"media.example.test"}, AllowAddrs: ranges}, &n, "media.example.test")
	if err := get(g.Client(0), "https://media.example.test:"+rec.port()+"/file"); !errors.Is(err, channels.ErrFetchRefused) {
		t.Fatalf("loopback outside the listed ranges: err %v, want ErrFetchRefused", err)
	}
}

func TestInternalAddr(t *testing.T) {
	internal := []string{
		"127.0.0.1", "127.1.2.3", "::1", "0.0.0.0", "::", "0.1.2.3",
		"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "fc00::1", "fd00:ec2::254",
		"169.254.169.254", "169.254.0.47", "fe80::1", "fe80::1%eth0",
		"100.64.0.1", "100.127.255.254", "192.0.0.192",
		"224.0.0.1", "239.255.255.250", "ff02::1", "ff05::2", "255.255.255.255", "240.0.0.1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",
		"::127.0.0.1", "2002:7f00:1::1", "fec0::1",
	}
	for _, s := range internal {
		if why := channels.InternalAddr(netip.MustParseAddr(s)); why == "" {
			t.Errorf("%s: judged public", s)
		}
	}
	public := []string{"1.1.1.1", "119.147.190.1", "100.128.0.1", "172.32.0.1", "2400:cb00::1", "64:ff9b::101:101", "::ffff:1.1.1.1"}
	for _, s := range public {
		if why := channels.InternalAddr(netip.MustParseAddr(s)); why != "" {
			t.Errorf("%s: judged %s, want public", s, why)
		}
	}
}

func TestParseHostPatterns(t *testing.T) {
	good := []string{"qyapi.weixin.qq.com", "*.myqcloud.com", "QYAPI.weixin.qq.com.", "127.0.0.1", "::1", "[fd00::1]"}
	if _, _, err := channels.ParseHostPatterns(good); err != nil {
		t.Fatalf("%q: %v", good, err)
	}
	for _, bad := range []string{"", "*", "*.com", "*qq.com", "a.*.qq.com", "https://qyapi.weixin.qq.com", "qyapi.weixin.qq.com:443",
		"qyapi.weixin.qq.com/path", "-bad.example.com", "under_score.example.com"} {
		_, _, err := channels.ParseHostPatterns([]string{"ok.example.com", bad})
		if err == nil || !strings.HasPrefix(err.Error(), "[1]: ") {
			t.Errorf("%q: err %v, want one naming [1]", bad, err)
		}
	}
}

// FuzzFetchGuardCheck: whatever a callback's URL holds, Check lets
// through only https to a listed host, and an IPv4-mapped address is
// judged as its IPv4 address.
func FuzzFetchGuardCheck(f *testing.F) {
	for _, s := range []string{
		"https://qyapi.weixin.qq.com/cgi-bin/aibot/response?response_code=x",
		"https://ww-aibot-img-1258476243.cos.ap-guangzhou.myqcloud.com/a?sign=b",
		"https://QYAPI.weixin.qq.com./", "https://qyapi.weixin.qq.com.evil.test/", "http://127.0.0.1:8080/",
		"https://[::ffff:169.254.169.254]/", "https://user@qyapi.weixin.qq.com/", "https://myqcloud.com/",
		"https://a.myqcloud.com%2e.evil.test/", "//qyapi.weixin.qq.com/",
	} {
		f.Add(s)
	}
	g, err := channels.NewFetchGuard(channels.FetchPolicy{Hosts: []string{"qyapi.weixin.qq.com", "*.myqcloud.com"}},
		channels.FetchOptions{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil || g.Check(u) != nil {
			return
		}
		h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if u.Scheme != "https" || u.User != nil || h != "qyapi.weixin.qq.com" && !strings.HasSuffix(h, ".myqcloud.com") {
			t.Fatalf("Check let %q through (scheme %q, host %q)", s, u.Scheme, h)
		}
	})
}

// FuzzInternalAddr: an IPv4 address and its IPv4-mapped IPv6 form are
// judged alike.
func FuzzInternalAddr(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1})
	f.Add([]byte{169, 254, 169, 254})
	f.Add([]byte{8, 8, 8, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 4 {
			return
		}
		v4 := netip.AddrFrom4([4]byte(b))
		mapped := netip.AddrFrom16(v4.As16())
		if got, want := channels.InternalAddr(mapped), channels.InternalAddr(v4); got != want {
			t.Fatalf("%s judged %q, its mapped form %s %q", v4, want, mapped, got)
		}
	})
}
