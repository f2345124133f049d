package console_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
	"github.com/hermes-gw/hermes/web/console"
)

// clock is the console's injected time, moved by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// loginServer is a console over real HTTP and a fresh database, with one
// admin account, a test clock and a count of the password checks.
type loginServer struct {
	url    string
	clk    *clock
	checks atomic.Int64
}

func newLoginServer(t *testing.T) *loginServer {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Open(ctx, storetest.URL(t), 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := console.CreateAdmin(ctx, pool, adminUser, adminPass, console.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	s := &loginServer{clk: &clock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}}
	c := console.New(console.Deps{Store: store.NewConsole(pool), Now: s.clk.Now, Logger: discard()})
	console.SetVerifier(c, func(hash, password []byte) error {
		s.checks.Add(1)
		return bcrypt.CompareHashAndPassword(hash, password)
	})
	srv := httptest.NewServer(c) // on 127.0.0.1
	t.Cleanup(srv.Close)
	s.url = srv.URL + console.Prefix
	return s
}

// browser is one client at one source address with its own cookies.
type browser struct {
	c    *http.Client
	base string
	csrf string
}

// from opens the login page from source address ip: every 127.0.0.0/8
// address reaches the loopback server, each a TCP peer of its own.
func (s *loginServer) from(t *testing.T, ip string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	b := &browser{base: s.url, c: &http.Client{Jar: jar, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	_, page := get(t, b.c, b.base+"/login")
	b.csrf = csrfOf(t, page)
	return b
}

// attempt is the answer to one login.
type attempt struct {
	status     int
	retryAfter int // seconds; 0 when absent
	body       string
}

func (b *browser) login(t *testing.T, user, password string) attempt {
	t.Helper()
	resp, err := b.c.PostForm(b.base+"/login", url.Values{"csrf": {b.csrf}, "username": {user}, "password": {password}})
	if err != nil {
		t.Error(err)
		return attempt{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	a := attempt{status: resp.StatusCode, body: html.UnescapeString(string(body))}
	if h := resp.Header.Get("Retry-After"); h != "" {
		if a.retryAfter, err = strconv.Atoi(h); err != nil {
			t.Errorf("Retry-After %q", h)
		}
	}
	return a
}

// TestParallelGuessesAreCountedBeforeTheirCheck: 60 wrong passwords sent
// at once from one address reach bcrypt only as often as the pair allows
// without a delay; the rest are refused with 429 and Retry-After, unchecked.
func TestParallelGuessesAreCountedBeforeTheirCheck(t *testing.T) {
	t.Parallel()
	s := newLoginServer(t)
	stranger := s.from(t, "127.0.0.2")
	const guesses = 60
	answers := make([]attempt, guesses)
	var wg sync.WaitGroup
	for i := range guesses {
		wg.Go(func() { answers[i] = stranger.login(t, adminUser, fmt.Sprintf("wrong-guess-%02d", i)) })
	}
	wg.Wait()
	byStatus := map[int]int{}
	for _, a := range answers {
		byStatus[a.status]++
		if a.status == http.StatusTooManyRequests && (a.retryAfter < 1 || !strings.Contains(a.body, "秒后再试")) {
			t.Errorf("429 without Retry-After or the Chinese message: %d, %q", a.retryAfter, a.body)
		}
	}
	t.Logf("answers %v, bcrypt checks %d", byStatus, s.checks.Load())
	const allowed = 5 // the pair's failures before its first delay
	if n := byStatus[http.StatusUnauthorized]; n == 0 || n > allowed {
		t.Errorf("%d of %d parallel guesses were checked (401), want 1 to %d; answers %v", n, guesses, allowed, byStatus)
	}
	if byStatus[http.StatusUnauthorized]+byStatus[http.StatusTooManyRequests] != guesses {
		t.Errorf("answers %v, want only 401 and 429", byStatus)
	}
	if got, want := s.checks.Load(), int64(byStatus[http.StatusUnauthorized]); got != want {
		t.Errorf("bcrypt ran %d times for %d checked guesses", got, want)
	}
}

// TestStrangerCannotLockTheAdminOut: failures from other addresses slow
// those addresses; the admin at their own address still signs in at once,
// and a new address waits at most the account's low cap.
func TestStrangerCannotLockTheAdminOut(t *testing.T) {
	t.Parallel()
	s := newLoginServer(t)
	admin := s.from(t, "127.0.0.3")
	if a := admin.login(t, adminUser, adminPass); a.status != http.StatusSeeOther {
		t.Fatalf("first login: %d", a.status)
	}
	admin = s.from(t, "127.0.0.3") // signed out, same address
	before := s.checks.Load()

	// Two strangers take the account past its own free failures.
	for _, ip := range []string{"127.0.0.2", "127.0.0.4"} {
		stranger := s.from(t, ip)
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() { stranger.login(t, adminUser, fmt.Sprintf("guess-%s-%d", ip, i)) })
		}
		wg.Wait()
		if a := stranger.login(t, adminUser, "one-more-guess"); a.status != http.StatusTooManyRequests {
			t.Errorf("stranger %s after 30 guesses: %d, want 429", ip, a.status)
		}
	}
	if n := s.checks.Load() - before; n > 10 {
		t.Errorf("60 guesses from two addresses reached bcrypt %d times, want at most 10", n)
	}

	if a := admin.login(t, adminUser, adminPass); a.status != http.StatusSeeOther {
		t.Fatalf("admin from their own address while strangers guess: %d (Retry-After %d), want signed in", a.status, a.retryAfter)
	}
	// The account has had 10 failures: a new address meets its delay,
	// which never grows past a minute.
	newcomer := s.from(t, "127.0.0.5")
	a := newcomer.login(t, adminUser, adminPass)
	if a.status != http.StatusTooManyRequests || a.retryAfter < 1 || a.retryAfter > 60 {
		t.Fatalf("new address: %d, Retry-After %d; want 429 and 1 to 60 s (the account's cap)", a.status, a.retryAfter)
	}
	s.clk.Advance(time.Duration(a.retryAfter) * time.Second)
	if a := newcomer.login(t, adminUser, adminPass); a.status != http.StatusSeeOther {
		t.Fatalf("admin from a new address after the account's delay: %d, want signed in", a.status)
	}
	if a := s.from(t, "127.0.0.2").login(t, adminUser, "still-guessing"); a.status != http.StatusTooManyRequests {
		t.Errorf("stranger after the admin signed in: %d, want still 429", a.status)
	}
}

// TestLoginDelayGrowsAndLapses: after the free failures each attempt
// waits twice as long as the one before, up to the cap; the wait lapses
// with the clock, a day without failures forgets them, and a success
// clears the address's counter for the account.
func TestLoginDelayGrowsAndLapses(t *testing.T) {
	t.Parallel()
	s := newLoginServer(t)
	b := s.from(t, "127.0.0.2")
	fail := func(i int) {
		t.Helper()
		if a := b.login(t, adminUser, fmt.Sprintf("wrong-%d", i)); a.status != http.StatusUnauthorized {
			t.Fatalf("wrong password #%d: %d (Retry-After %d), want 401", i, a.status, a.retryAfter)
		}
	}
	refused := func(want int) {
		t.Helper()
		a := b.login(t, adminUser, adminPass) // even the right password waits
		if a.status != http.StatusTooManyRequests || a.retryAfter != want {
			t.Fatalf("attempt before the delay: %d, Retry-After %d; want 429 and %d", a.status, a.retryAfter, want)
		}
	}
	for i := range 5 {
		fail(i)
	}
	// 2 s, 4 s ... then the cap of 15 minutes.
	for _, want := range []int{2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900} {
		refused(want)
		s.clk.Advance(time.Duration(want-1) * time.Second)
		refused(1)
		s.clk.Advance(time.Second)
		fail(want)
	}

	// A day without failures: the counters start from zero.
	s.clk.Advance(24*time.Hour + time.Second)
	for i := range 5 {
		fail(100 + i)
	}
	refused(2)

	// A success clears this address's counter for the account.
	s.clk.Advance(2 * time.Second)
	if a := b.login(t, adminUser, adminPass); a.status != http.StatusSeeOther {
		t.Fatalf("right password after the delay: %d", a.status)
	}
	b = s.from(t, "127.0.0.2")
	for i := range 5 {
		fail(200 + i)
	}
	refused(2)

	// The English message names the wait.
	if _, err := b.c.Get(b.base + "/lang?to=en"); err != nil {
		t.Fatal(err)
	}
	if a := b.login(t, adminUser, adminPass); !strings.Contains(a.body, "try again in 2 seconds") {
		t.Errorf("English 429 page lacks the wait:\n%s", a.body)
	}
}

// TestOneAddressSprayingAccountsIsSlowed: one address trying many names
// (existing or not, valid or not) meets the address's own delay.
func TestOneAddressSprayingAccountsIsSlowed(t *testing.T) {
	t.Parallel()
	s := newLoginServer(t)
	b := s.from(t, "127.0.0.2")
	for i := range 20 {
		name := fmt.Sprintf("user%02d", i)
		if i%5 == 0 {
			name = fmt.Sprintf("not a valid name %d!", i) // counted on the address only
		}
		if a := b.login(t, name, "some-password"); a.status != http.StatusUnauthorized {
			t.Fatalf("guess %d (%s): %d, want 401", i, name, a.status)
		}
	}
	if a := b.login(t, "someone-new", "some-password"); a.status != http.StatusTooManyRequests || a.retryAfter != 2 {
		t.Fatalf("21st name from one address: %d, Retry-After %d; want 429 and 2", a.status, a.retryAfter)
	}
	if a := s.from(t, "127.0.0.3").login(t, adminUser, adminPass); a.status != http.StatusSeeOther {
		t.Errorf("admin from another address: %d, want signed in", a.status)
	}
}
