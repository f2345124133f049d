package channels_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// Every refusal, wrapped as a platform wraps it, names its check and its
// status; what is not the request's fault names none.
func TestRefusalCheck(t *testing.T) {
	for _, tc := range []struct {
		err    error
		check  string
		status int
	}{
		{channels.ErrSignature, channels.CheckSignature, http.StatusUnauthorized},
		{channels.ErrStale, channels.CheckTimestamp, http.StatusUnauthorized},
		{channels.ErrReplayed, channels.CheckReplay, http.StatusUnauthorized},
		{channels.ErrCorp, channels.CheckCorp, http.StatusUnauthorized},
		{channels.ErrToken, channels.CheckToken, http.StatusUnauthorized},
		{channels.ErrDecrypt, channels.CheckDecrypt, http.StatusBadRequest},
		{channels.ErrMalformed, channels.CheckMalformed, http.StatusBadRequest},
		{fmt.Errorf("read body: %w", channels.ErrBadRequest), channels.CheckMalformed, http.StatusBadRequest},
		{channels.ErrUnavailable, "", http.StatusServiceUnavailable},
		{errors.New("anything else"), "", http.StatusInternalServerError},
	} {
		platform := fmt.Errorf("app %q: callback: %w", "hr", fmt.Errorf("wecom: %w", tc.err))
		if got := channels.RefusalCheck(platform); got != tc.check {
			t.Errorf("RefusalCheck(%v) = %q, want %q", platform, got, tc.check)
		}
		if got := channels.HTTPStatus(platform); got != tc.status {
			t.Errorf("HTTPStatus(%v) = %d, want %d", platform, got, tc.status)
		}
	}
}

func TestVerifyTimestamp(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	errStale := fmt.Errorf("test: %w", channels.ErrStale)
	t.Run("OK", func(t *testing.T) {
		for _, tc := range []struct {
			ts   string
			unit time.Duration
			want time.Time
		}{
			{"1700000000", time.Second, now},
			{"1699999701", time.Second, now.Add(-299 * time.Second)},
			{"1700000299", time.Second, now.Add(299 * time.Second)},
			{"1700000000123", time.Millisecond, now.Add(123 * time.Millisecond)},
		} {
			got, err := channels.VerifyTimestamp(tc.ts, tc.unit, now, 5*time.Minute, errStale)
			if err != nil || !got.Equal(tc.want) {
				t.Errorf("VerifyTimestamp(%s, %s) = %s, %v; want %s", tc.ts, tc.unit, got, err, tc.want)
			}
		}
	})
	t.Run("ErrStale", func(t *testing.T) {
		for _, tc := range []struct {
			ts   string
			unit time.Duration
		}{
			{"", time.Second},
			{"soon", time.Second},
			{"1699999699", time.Second},
			{"1700000301", time.Second},
			{"1700000000", time.Millisecond}, // seconds where milliseconds are due
			{"-1", time.Second},
			{"99999999999999999999", time.Second},
			{"9223372036854775807", time.Millisecond},
		} {
			_, err := channels.VerifyTimestamp(tc.ts, tc.unit, now, 5*time.Minute, errStale)
			if !errors.Is(err, errStale) || channels.RefusalCheck(err) != channels.CheckTimestamp {
				t.Errorf("VerifyTimestamp(%q, %s) = %v, want the caller's stale error", tc.ts, tc.unit, err)
			}
		}
	})
}
