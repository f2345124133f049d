package reports

import (
	"testing"
	"time"
)

func TestTooClose(t *testing.T) {
	sh, _ := time.LoadLocation("Asia/Shanghai")
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, sh) // a Tuesday
	for _, tc := range []struct {
		cron string
		gap  time.Duration
		want bool
	}{
		{"* * * * *", time.Hour, true},
		{"*/10 * * * * *", time.Hour, true},
		{"*/30 9-17 * * *", time.Hour, true},
		{"0,10 9 * * 1", time.Hour, true},      // twice each Monday morning
		{"*/5 9 1 * *", time.Hour, true},       // on the 1st only: the next week has no fire at all
		{"0 9,9 * * *", time.Hour, false},      // one fire a day, written twice
		{"0 * * * *", time.Hour, false},        // hourly: exactly the minimum
		{"0 9 * * 1", time.Hour, false},        // weekly
		{"0 9 * * 1-5", 24 * time.Hour, false}, // workdays, a day apart
		{"0 9,15 * * *", 24 * time.Hour, true}, // twice a day, under a daily minimum
		{"@hourly", time.Hour, false},          // descriptors count by their fires too
		{"@every 30m", time.Hour, true},
	} {
		s, err := ParseSchedule(tc.cron, "Asia/Shanghai")
		if err != nil {
			t.Fatalf("%q: %v", tc.cron, err)
		}
		a, b, found := s.TooClose(now, tc.gap)
		if found != tc.want {
			t.Errorf("%q under %s: found %v (%s, %s), want %v", tc.cron, tc.gap, found, a, b, tc.want)
		}
		if found && (b.Sub(a) >= tc.gap || !a.After(now)) {
			t.Errorf("%q: fires %s and %s are not a violation", tc.cron, a, b)
		}
	}
}
