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

// Words are how a schedule is said to users (messages.reports.schedule):
// the shapes Describe names, the weekdays and the units of a duration,
// Chinese by default (DefaultWords). Each sentence keeps the verbs of its
// default, in order.
type Words struct {
	// Weekdays name the days, Sunday first as in time.Weekday (7 names).
	Weekdays []string `yaml:"weekdays"`
	Daily    string   `yaml:"daily"`    // every day: %s the time of day, %s the time zone
	Weekly   string   `yaml:"weekly"`   // one weekday: %s the weekday, %s the time, %s the zone
	Workdays string   `yaml:"workdays"` // Monday to Friday: %s the time, %s the zone
	Monthly  string   `yaml:"monthly"`  // one day of the month: %s the day, %s the time, %s the zone
	Cron     string   `yaml:"cron"`     // any other schedule: %s the cron expression, %s the zone
	Hours    string   `yaml:"hours"`    // %d hours, in a duration
	Minutes  string   `yaml:"minutes"`  // %d minutes
	Seconds  string   `yaml:"seconds"`  // %d seconds
}

// DefaultWords are the Chinese Words.
var DefaultWords = Words{
	Weekdays: []string{"周日", "周一", "周二", "周三", "周四", "周五", "周六"},
	Daily:    "每天 %s（%s）",
	Weekly:   "每%s %s（%s）",
	Workdays: "每个工作日（周一至周五）%s（%s）",
	Monthly:  "每月 %s 日 %s（%s）",
	Cron:     "按 cron「%s」（%s）",
	Hours:    "%d 小时",
	Minutes:  "%d 分钟",
	Seconds:  "%d 秒",
}

// Weekday is the name of t's weekday (周一), as Describe and the fire
// times listed with it say it.
func (w Words) Weekday(t time.Time) string {
	if len(w.Weekdays) != 7 {
		w.Weekdays = DefaultWords.Weekdays
	}
	return w.Weekdays[t.Weekday()]
}

// Weekday is DefaultWords' name of t's weekday.
func Weekday(t time.Time) string { return DefaultWords.Weekday(t) }

// Describe says in DefaultWords when s fires (see Words.Describe).
func (s Schedule) Describe(now time.Time) string { return DefaultWords.Describe(s, now) }

// Describe says when s fires, from its next fire times: the shape of a
// common schedule (每天/每周一/每月 1 日 09:00) or, for others, the
// expression itself. Users confirm by the fire times listed with it.
func (w Words) Describe(s Schedule, now time.Time) string {
	fields := strings.Fields(s.Expr)
	if len(fields) == 6 {
		fields = fields[1:]
	}
	if len(fields) != 5 || !plainNumber(fields[0]) || !plainNumber(fields[1]) || fields[3] != "*" {
		return fmt.Sprintf(w.Cron, s.Expr, s.Loc)
	}
	next := s.Next(now)
	clock := fmt.Sprintf("%02d:%02d", next.Hour(), next.Minute())
	dom, dow := fields[2], fields[4]
	switch {
	case dom == "*" && dow == "*":
		return fmt.Sprintf(w.Daily, clock, s.Loc)
	case dom == "*" && plainNumber(dow):
		return fmt.Sprintf(w.Weekly, w.Weekday(next), clock, s.Loc)
	case dom == "*" && (dow == "1-5" || strings.EqualFold(dow, "MON-FRI")):
		return fmt.Sprintf(w.Workdays, clock, s.Loc)
	case plainNumber(dom) && dow == "*":
		return fmt.Sprintf(w.Monthly, dom, clock, s.Loc)
	}
	return fmt.Sprintf(w.Cron, s.Expr, s.Loc)
}

// Duration says d in whole hours, minutes and seconds ("1 小时 30 分钟",
// "10 秒").
func (w Words) Duration(d time.Duration) string {
	h, m, sec := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	var parts []string
	if h > 0 {
		parts = append(parts, fmt.Sprintf(w.Hours, h))
	}
	if m > 0 {
		parts = append(parts, fmt.Sprintf(w.Minutes, m))
	}
	if sec > 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf(w.Seconds, sec))
	}
	return strings.Join(parts, " ")
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
