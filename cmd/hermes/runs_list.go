package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/gateway/store"
)

// runsListTextRunes is how much of the user's message a list line shows.
const runsListTextRunes = 30

// runRunsList prints the runs matching the filters, newest first, one per
// line, so a run can be found without SQL and then shown.
func runRunsList(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("runs list", std.err)
	var f store.RunFilter
	fs.StringVar(&f.UserID, "user", "", "the sender's user id")
	fs.StringVar(&f.ChatID, "chat", "", "the conversation id")
	fs.StringVar(&f.StopReason, "stop", "", "stop reason: finished, timeout, max_steps, fatal_tool_error, confirmed...")
	since := fs.String("since", "", "started at or after: RFC 3339 time, a date (2026-11-30) or a duration ago (24h)")
	until := fs.String("until", "", "started before: same forms as --since")
	fs.IntVar(&f.Limit, "limit", 50, "at most this many runs")
	cfg, err := parseAndLoad(fs, path, args)
	if err != nil {
		return err
	}
	now := time.Now()
	if f.Since, err = parseWhen(*since, now); err != nil {
		return usageError(fs, std, "--since", err)
	}
	if f.Until, err = parseWhen(*until, now); err != nil {
		return usageError(fs, std, "--until", err)
	}
	pool, err := store.Open(ctx, cfg.Database.URL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	runs, err := store.ListRuns(ctx, pool, f)
	if err != nil {
		return err
	}
	printRuns(std.out, runs)
	return nil
}

func usageError(fs *flag.FlagSet, std stdio, name string, err error) error {
	fmt.Fprintf(std.err, "hermes %s: %s: %v\n", fs.Name(), name, err)
	return errUsage
}

// parseWhen reads a point in time: RFC 3339, a date (local midnight), or
// a duration before now. Empty is the zero time (no bound).
func parseWhen(s string, now time.Time) (time.Time, error) {
	switch {
	case s == "":
		return time.Time{}, nil
	case strings.Contains(s, "T"):
		return time.Parse(time.RFC3339, s)
	case strings.Count(s, "-") == 2:
		return time.ParseInLocation(time.DateOnly, s, time.Local)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time, a date or a duration", s)
	}
	return now.Add(-d), nil
}

// printRuns writes one line per run: when, id, stop, where, who and what.
func printRuns(w io.Writer, runs []store.RunSummary) {
	if len(runs) == 0 {
		fmt.Fprintln(w, "no runs")
		return
	}
	for _, r := range runs {
		fmt.Fprintf(w, "%s  %s  %-22s %s/%s  user %s  chat %s  msg %s  %q\n",
			r.StartedAt.Local().Format(time.DateTime), r.ID, r.StopReason, r.Channel, r.Account, r.UserID, r.ChatID,
			r.MessageID, headRunes(r.Text, runsListTextRunes))
	}
}

// headRunes cuts s to n runes, marking the cut.
func headRunes(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
