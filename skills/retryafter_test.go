package skills

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   time.Duration
		ok     bool
	}{
		{"Seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{"Spaced", http.Header{"Retry-After": {" 2 "}}, 2 * time.Second, true},
		{"Date", http.Header{"Retry-After": {now.Add(5 * time.Second).Format(http.TimeFormat)}}, 5 * time.Second, true},
		{"PastDate", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, true},
		{"Milliseconds", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond, true},
		{"None", http.Header{}, 0, false},
		{"Garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tc.header, now)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("ParseRetryAfter = %s, %v; want %s, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
