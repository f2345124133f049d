package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/alerts"
	"github.com/hermes-gw/hermes/gateway/store"
)

// alertsCommands are the subcommands of `hermes alerts`: an operator's
// view of the alert rules (alerts.rules) and their silences.
var alertsCommands = map[string]command{
	"list":    {"print each alert rule, whether it is firing or silenced, and its latest incidents: hermes alerts list", runAlertsList},
	"silence": {"stop posting a rule's alerts for a while (recorded with who and why): hermes alerts silence --rule NAME --for 2h [--reason TEXT]", runAlertsSilence},
}

// runAlerts dispatches `hermes alerts <subcommand>`.
func runAlerts(ctx context.Context, args []string, std stdio) error {
	return runSubcommand(ctx, "alerts", alertsCommands, args, std)
}

func runAlertsList(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("alerts list", std.err)
	cfg, err := parseAndLoad(fs, path, args)
	if err != nil {
		return err
	}
	pool, err := store.Open(ctx, cfg.Database.URL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	states, err := alerts.States(ctx, pool, cfg.Alerts.Rules, 3)
	if err != nil {
		return err
	}
	if len(states) == 0 {
		fmt.Fprintln(std.out, "no alert rules (alerts.rules)")
	}
	now := time.Now()
	for _, s := range states {
		state := "ok"
		if s.FiringSince != nil {
			state = "FIRING since " + s.FiringSince.Local().Format("2006-01-02 15:04")
		}
		if s.SilencedUntil != nil && now.Before(*s.SilencedUntil) {
			state += fmt.Sprintf(", silenced until %s by %s", s.SilencedUntil.Local().Format("2006-01-02 15:04"), s.SilencedBy)
		}
		fmt.Fprintf(std.out, "%s\t%s > %s over %s\t%s\n", s.Rule.Name, s.Rule.When, s.Rule.Above, s.Rule.Window, state)
		for _, f := range s.LatestFirings {
			end := "open"
			if f.ResolvedAt != nil {
				end = "resolved " + f.ResolvedAt.Local().Format("2006-01-02 15:04")
			}
			muted := ""
			if f.Silenced {
				muted = " (silenced)"
			}
			fmt.Fprintf(std.out, "\t%s\tvalue %g\t%s%s\n", f.Start.Local().Format("2006-01-02 15:04"), f.Value, end, muted)
		}
	}
	return nil
}

func runAlertsSilence(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("alerts silence", std.err)
	rule := fs.String("rule", "", "the rule's name (alerts.rules[].name; required)")
	d := fs.Duration("for", 0, "how long, e.g. 2h; 0 lifts the silence (at most a week)")
	reason := fs.String("reason", "", "why, for the record")
	admin := fs.String("admin", defaultAdmin(), "who asks, for the record")
	cfg, err := parseAndLoad(fs, path, args)
	if err != nil {
		return err
	}
	if *rule == "" || *d < 0 || fs.NArg() > 0 {
		fmt.Fprintln(std.err, "usage: hermes alerts silence [--config FILE] --rule NAME --for DURATION [--reason TEXT] [--admin NAME]")
		return errUsage
	}
	pool, err := store.Open(ctx, cfg.Database.URL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	now := time.Now()
	var until time.Time
	if *d > 0 {
		until = now.Add(*d)
	}
	err = store.InTx(ctx, pool, func(tx pgx.Tx) error {
		return alerts.Silence(ctx, tx, cfg.Alerts.Rules, *rule, until, *admin, *reason, now)
	})
	if err != nil {
		return err
	}
	if until.IsZero() {
		fmt.Fprintf(std.out, "alerts of %s are posted again\n", *rule)
	} else {
		fmt.Fprintf(std.out, "alerts of %s silenced until %s\n", *rule, until.Local().Format("2006-01-02 15:04"))
	}
	return nil
}
