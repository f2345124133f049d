package dingtalk

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// The official vector (protocols.md).
func TestSign_OfficialVector(t *testing.T) {
	const want = "jcUpW0QmtKduN03n4JqQ0PBosVjqnM8gU7fIIvsDmCM="
	if got := Sign("SECabc", "1700000000000"); got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
	if got := dingtalktest.Sign("SECabc", "1700000000000"); got != want {
		t.Errorf("dingtalktest.Sign = %q, want %q", got, want)
	}
}

func TestVerifyHeaders(t *testing.T) {
	c := newClock()
	r := &robot{cfg: RobotSection{AppSecret: "SECabc"}, window: time.Hour, now: c.Now}
	headers := func(ts time.Time, sign string) http.Header {
		ms := strconv.FormatInt(ts.UnixMilli(), 10)
		if sign == "" {
			sign = Sign("SECabc", ms)
		}
		return http.Header{"Timestamp": {ms}, "Sign": {sign}}
	}
	t.Run("OK", func(t *testing.T) {
		signed := c.Now().Add(-59 * time.Minute)
		once, err := r.verifyHeaders(headers(signed, ""))
		if err != nil {
			t.Fatal(err)
		}
		// The proof names the pair, holds no header, and lives as long as
		// the timestamp is in the window.
		again, _ := r.verifyHeaders(headers(signed, ""))
		other, _ := r.verifyHeaders(headers(signed.Add(time.Millisecond), ""))
		if once.nonce == "" || once != again || once.nonce == other.nonce || strings.Contains(once.nonce, Sign("SECabc", strconv.FormatInt(signed.UnixMilli(), 10))) {
			t.Errorf("proofs %+v, %+v, %+v", once, again, other)
		}
		if !once.expires.Equal(time.UnixMilli(signed.UnixMilli()).Add(time.Hour)) {
			t.Errorf("proof expires %s, want the timestamp + 1h", once.expires)
		}
	})
	t.Run("ErrSignature", func(t *testing.T) {
		for _, h := range []http.Header{headers(c.Now(), "forged"), {}, {"Timestamp": {"1700000000000"}}} {
			if _, err := r.verifyHeaders(h); !errors.Is(err, ErrSignature) {
				t.Errorf("%v: err = %v, want ErrSignature", h, err)
			}
		}
	})
	t.Run("ErrStale", func(t *testing.T) {
		for _, d := range []time.Duration{-61 * time.Minute, 61 * time.Minute} {
			if _, err := r.verifyHeaders(headers(c.Now().Add(d), "")); !errors.Is(err, ErrStale) {
				t.Errorf("%s: err = %v, want ErrStale", d, err)
			}
		}
	})
}
