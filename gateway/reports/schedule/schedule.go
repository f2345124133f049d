// Package schedule reads a scheduled report's cron expression in its
// time zone, finds its fire times and says them in Chinese. It is a leaf
// (it imports no Hermes package) because the config's validation and the
// console read schedules as well as the reports feature (gateway/reports),
// which itself depends on the gateway. One file: schedule.go.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser reads 5 fields (minute hour day month weekday) or 6 with
// seconds first; descriptors such as @daily as well.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ErrBad: a cron expression or time zone that cannot be read.
var ErrBad = errors.New("reports: bad schedule")

// Schedule is a parsed cron expression in its time zone.
type Schedule struct {
	Expr string
	Loc  *time.Location
	s    cron.Schedule
}

// Parse reads expr in the IANA time zone tz. Errors wrap
// ErrBad and say what is wrong.
func Parse(expr, tz string) (Schedule, error) {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		return Schedule{}, fmt.Errorf("%w: give the time zone separately, not in the expression", ErrBad)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "" {
		return Schedule{}, fmt.Errorf("%w: time zone %q: want an IANA name such as Asia/Shanghai", ErrBad, tz)
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return Schedule{}, fmt.Errorf("%w: cron %q: %v", ErrBad, expr, err)
	}
	sch := Schedule{Expr: expr, Loc: loc, s: s}
	if sch.Next(time.Now()).IsZero() {
		return Schedule{}, fmt.Errorf("%w: cron %q never fires", ErrBad, expr)
	}
	return sch, nil
}

// Next is the first fire time after t (zero if none in five years).
func (s Schedule) Next(t time.Time) time.Time {
	return s.s.Next(t.In(s.Loc))
}

// NextN are the next n fire times after t.
func (s Schedule) NextN(t time.Time, n int) []time.Time {
	var out []time.Time
	for range n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

// Bounds of TooClose's look ahead: a year of fires covers every month and
// weekday a cron expression can name; the count bounds the work for
// schedules that fire very often (they fail on their first two fires).
const (
	gapHorizon  = 366 * 24 * time.Hour
	maxGapFires = 20000
)

// TooClose finds the first two consecutive fires after t that are less
// than gap apart, looking at the fires of the coming year (at most
// maxGapFires of them): the schedule's actual fire times, not its text,
// so "*/5 9 * * 1" and "0,10 9 1 * *" are caught as well as "* * * * *".
// found is false when no two are that close.
func (s Schedule) TooClose(t time.Time, gap time.Duration) (first, second time.Time, found bool) {
	end := t.Add(gapHorizon)
	prev := s.Next(t)
	for n := 0; n < maxGapFires && !prev.IsZero() && prev.Before(end); n++ {
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		if next.Sub(prev) < gap {
			return prev, next, true
		}
		prev = next
	}
	return time.Time{}, time.Time{}, false
}

// weekdays are Chinese weekday names, Sunday first as in time.Weekday.
var weekdays = [...]string{"周日", "周一", "周二", "周三", "周四", "周五", "周六"}

// Weekday is the Chinese name of t's weekday (周一), as Describe and the
// fire times listed with it say it.
func Weekday(t time.Time) string { return weekdays[t.Weekday()] }

// Describe says in Chinese when s fires, from its next fire times: the
// shape of a common schedule (每天/每周一/每月 1 日 09:00) or, for others,
// the expression itself. Users confirm by the fire times listed with it.
func (s Schedule) Describe(now time.Time) string {
	fields := strings.Fields(s.Expr)
	if len(fields) == 6 {
		fields = fields[1:]
	}
	if len(fields) != 5 || !plainNumber(fields[0]) || !plainNumber(fields[1]) || fields[3] != "*" {
		return fmt.Sprintf("按 cron「%s」（%s）", s.Expr, s.Loc)
	}
	next := s.Next(now)
	clock := fmt.Sprintf("%02d:%02d", next.Hour(), next.Minute())
	dom, dow := fields[2], fields[4]
	switch {
	case dom == "*" && dow == "*":
		return fmt.Sprintf("每天 %s（%s）", clock, s.Loc)
	case dom == "*" && plainNumber(dow):
		return fmt.Sprintf("每%s %s（%s）", Weekday(next), clock, s.Loc)
	case dom == "*" && (dow == "1-5" || strings.EqualFold(dow, "MON-FRI")):
		return fmt.Sprintf("每个工作日（周一至周五）%s（%s）", clock, s.Loc)
	case plainNumber(dom) && dow == "*":
		return fmt.Sprintf("每月 %s 日 %s（%s）", dom, clock, s.Loc)
	}
	return fmt.Sprintf("按 cron「%s」（%s）", s.Expr, s.Loc)
}

func plainNumber(f string) bool {
	if f == "" {
		return false
	}
	for _, r := range f {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
