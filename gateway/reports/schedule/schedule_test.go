package schedule

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
		s, err := Parse(tc.cron, "Asia/Shanghai")
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

func TestParse(t *testing.T) {
	sh, _ := time.LoadLocation("Asia/Shanghai")
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, sh) // a Tuesday
	s, err := Parse("0 9 * * 1", "Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	next := s.NextN(now, 3)
	want := []string{"2026-12-07 09:00", "2026-12-14 09:00", "2026-12-21 09:00"}
	for i, w := range want {
		if got := next[i].Format("2006-01-02 15:04"); got != w {
			t.Errorf("fire %d: %s, want %s", i, got, w)
		}
	}
	if d := s.Describe(now); d != "每周一 09:00（Asia/Shanghai）" {
		t.Errorf("describe: %q", d)
	}
	if _, err := Parse("*/10 * * * * *", "UTC"); err != nil {
		t.Errorf("6 fields with seconds: %v", err)
	}
	for _, bad := range [][2]string{{"0 9 * *", "UTC"}, {"61 9 * * *", "UTC"}, {"0 9 * * 1", "Mars/Base"}, {"0 9 * * 1", ""}, {"CRON_TZ=UTC 0 9 * * 1", "UTC"}} {
		if _, err := Parse(bad[0], bad[1]); err == nil {
			t.Errorf("%q in %q: no error", bad[0], bad[1])
		}
	}
}

func TestWeekday(t *testing.T) {
	sh, _ := time.LoadLocation("Asia/Shanghai")
	for day, want := range map[int]string{6: "周日", 7: "周一", 12: "周六"} {
		if got := Weekday(time.Date(2026, 12, day, 9, 0, 0, 0, sh)); got != want {
			t.Errorf("2026-12-%02d: %s, want %s", day, got, want)
		}
	}
}
