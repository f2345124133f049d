package dingtalk

import (
	"errors"
	"net/http"
	"strconv"
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
		if err := r.verifyHeaders(headers(c.Now().Add(-59*time.Minute), "")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrSignature", func(t *testing.T) {
		for _, h := range []http.Header{headers(c.Now(), "forged"), {}, {"Timestamp": {"1700000000000"}}} {
			if err := r.verifyHeaders(h); !errors.Is(err, ErrSignature) {
				t.Errorf("%v: err = %v, want ErrSignature", h, err)
			}
		}
	})
	t.Run("ErrStale", func(t *testing.T) {
		for _, d := range []time.Duration{-61 * time.Minute, 61 * time.Minute} {
			if err := r.verifyHeaders(headers(c.Now().Add(d), "")); !errors.Is(err, ErrStale) {
				t.Errorf("%s: err = %v, want ErrStale", d, err)
			}
		}
	})
}
