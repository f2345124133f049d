package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
)

// reportsCommands are the subcommands of `hermes reports`.
var reportsCommands = map[string]command{
	"list":    {"list every report: hermes reports list", runReportsList},
	"add":     {"create a report: hermes reports add --name N --cron C --owner CH/ACCOUNT/CORP/USER --target CH/ACCOUNT/single|group/CHAT (--skill S [--args J] [--template T] [--chart J] | --prompt P)", runReportsAdd},
	"run-now": {"send a report now: hermes reports run-now ID", runReportsRunNow},
	"pause":   {"pause a report: hermes reports pause ID", func(ctx context.Context, a []string, s stdio) error { return runReportsPaused(ctx, a, s, true) }},
	"resume":  {"resume a report: hermes reports resume ID", func(ctx context.Context, a []string, s stdio) error { return runReportsPaused(ctx, a, s, false) }},
	"delete":  {"delete a report and its history: hermes reports delete ID", runReportsDelete},
	"history": {"a report's runs and deliveries: hermes reports history [--limit N] ID", runReportsHistory},
}

// runReports dispatches `hermes reports <subcommand>`.
func runReports(ctx context.Context, args []string, std stdio) error {
	return runSubcommand(ctx, "reports", reportsCommands, args, std)
}

// reportsEnv is what a reports subcommand works with: the database, and
// for add and run-now a gateway that only inserts jobs (it checks
// skills and targets like `serve` would).
type reportsEnv struct {
	pool    *pgxpool.Pool
	gw      *gateway.Gateway
	reports *reports.Service // the gateway's
	id      int64            // the ID argument, when the command takes one
}

// reportsPoolConns is the pool of a reports subcommand: an insert-only
// gateway still wants the spare connections every gateway checks for.
const reportsPoolConns = 12

func openReports(ctx context.Context, name string, args []string, std stdio, wantID, wantGateway bool, extra func(*flag.FlagSet)) (*reportsEnv, func(), error) {
	fs, path := newFlags("reports "+name, std.err)
	if extra != nil {
		extra(fs)
	}
	cfg, err := parseAndLoad(fs, path, args)
	if err != nil {
		return nil, nil, err
	}
	env := &reportsEnv{}
	if wantID {
		if fs.NArg() != 1 {
			fmt.Fprintf(std.err, "usage: hermes reports %s [--config FILE] ID\n", name)
			return nil, nil, errUsage
		}
		if env.id, err = strconv.ParseInt(fs.Arg(0), 10, 64); err != nil {
			return nil, nil, fmt.Errorf("report id %q: not a number", fs.Arg(0))
		}
	}
	if env.pool, err = store.Open(ctx, cfg.Database.URL, reportsPoolConns); err != nil {
		return nil, nil, err
	}
	closeAll := env.pool.Close
	if wantGateway {
		// Insert only: this process works no queue; `serve` runs the jobs.
		features := newFeatures()
		env.reports, _ = gateway.FeatureOf[*reports.Service](features)
		env.gw, err = gateway.New(ctx, cfg, gateway.Deps{Pool: env.pool, Platforms: platforms, Features: features, Queues: map[string]int{}, Partial: true})
		if err != nil {
			env.pool.Close()
			return nil, nil, err
		}
		closeAll = func() { _ = env.gw.Stop(context.WithoutCancel(ctx)); env.pool.Close() }
	}
	return env, closeAll, nil
}

func runReportsList(ctx context.Context, args []string, std stdio) error {
	env, done, err := openReports(ctx, "list", args, std, false, true, nil)
	if err != nil {
		return err
	}
	defer done()
	rs, err := env.reports.ListReports(ctx, nil)
	if err != nil {
		return err
	}
	for _, r := range rs {
		state, next := "active", "-"
		if r.Paused {
			state = "paused"
		} else if !r.Next.IsZero() {
			next = r.Next.Format("2006-01-02 15:04 MST")
		}
		fmt.Fprintf(std.out, "%d\t%s\t%s\t%s\tnext %s\towner %s/%s\t%d target(s)\n", r.ID, r.Name, r.When, state, next,
			r.Owner.Channel, r.Owner.User, len(r.Targets))
	}
	return nil
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runReportsAdd(ctx context.Context, args []string, std stdio) error {
	// The operator creates it: the limits of reports made in chat do not
	// hold (schedule, count, write skills).
	nr := reports.NewReport{ByAdmin: true}
	var owner, argsJSON, chartJSON string
	var targets listFlag
	env, done, err := openReports(ctx, "add", args, std, false, true, func(fs *flag.FlagSet) {
		fs.StringVar(&nr.Name, "name", "", "report name")
		fs.StringVar(&nr.Cron, "cron", "", "cron expression, 5 fields or 6 with seconds")
		fs.StringVar(&nr.TZ, "tz", "", "IANA time zone (default reports.time_zone)")
		fs.StringVar(&nr.CatchUp, "catch-up", reports.CatchUpRunOnce, "a tick missed while down: run_once or skip")
		fs.StringVar(&owner, "owner", "", "who it runs as: CHANNEL/ACCOUNT/CORP/USER")
		fs.Var(&targets, "target", "where it goes: CHANNEL/ACCOUNT/single|group/CHAT_ID (repeatable)")
		fs.StringVar(&nr.Spec.Skill, "skill", "", "skill whose answer is the report")
		fs.StringVar(&argsJSON, "args", "", "the skill's fixed arguments, a JSON object")
		fs.StringVar(&nr.Spec.Template, "template", "", "Go text/template over .Data, .Report, .Time")
		fs.StringVar(&chartJSON, "chart", "", `chart, JSON: {"type":"bar","rows":"...","label":"...","values":["..."]}`)
		fs.StringVar(&nr.Spec.Prompt, "prompt", "", "instead of --skill: a request the agent answers")
	})
	if err != nil {
		return err
	}
	defer done()
	if nr.Owner, err = parseOwner(owner); err != nil {
		return err
	}
	for _, t := range targets {
		ref, err := parseTarget(t)
		if err != nil {
			return err
		}
		nr.Targets = append(nr.Targets, ref)
	}
	if argsJSON != "" {
		nr.Spec.Args = json.RawMessage(argsJSON)
	}
	if chartJSON != "" {
		nr.Spec.Chart = new(reports.ChartSpec)
		if err := json.Unmarshal([]byte(chartJSON), nr.Spec.Chart); err != nil {
			return fmt.Errorf("--chart: %w", err)
		}
	}
	r, err := env.reports.CreateReport(ctx, nr)
	if err != nil {
		return err
	}
	fmt.Fprintf(std.out, "report %d created\n", r.ID)
	return nil
}

func parseOwner(s string) (store.ReportOwner, error) {
	p := strings.Split(s, "/")
	if len(p) != 4 || slices.Contains(p, "") {
		return store.ReportOwner{}, errors.New("--owner: want CHANNEL/ACCOUNT/CORP/USER, e.g. wecom/app-hr/ww123/zhangsan")
	}
	return store.ReportOwner{Channel: p[0], Account: p[1], Corp: p[2], User: p[3]}, nil
}

func parseTarget(s string) (reports.TargetRef, error) {
	p := strings.Split(s, "/")
	if len(p) != 4 || slices.Contains(p, "") {
		return reports.TargetRef{}, fmt.Errorf("--target %q: want CHANNEL/ACCOUNT/single|group/CHAT_ID", s)
	}
	return reports.TargetRef{Channel: p[0], Account: p[1], ChatType: p[2], ChatID: p[3]}, nil
}

func runReportsRunNow(ctx context.Context, args []string, std stdio) error {
	env, done, err := openReports(ctx, "run-now", args, std, true, true, nil)
	if err != nil {
		return err
	}
	defer done()
	runID, err := env.reports.RunReportNow(ctx, env.id, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(std.out, "run %d queued; `hermes reports history %d` shows its deliveries\n", runID, env.id)
	return nil
}

func runReportsPaused(ctx context.Context, args []string, std stdio, paused bool) error {
	name := map[bool]string{true: "pause", false: "resume"}[paused]
	env, done, err := openReports(ctx, name, args, std, true, false, nil)
	if err != nil {
		return err
	}
	defer done()
	return store.SetReportPaused(ctx, env.pool, env.id, nil, paused, time.Now())
}

func runReportsDelete(ctx context.Context, args []string, std stdio) error {
	env, done, err := openReports(ctx, "delete", args, std, true, false, nil)
	if err != nil {
		return err
	}
	defer done()
	return store.DeleteReport(ctx, env.pool, env.id, nil)
}

func runReportsHistory(ctx context.Context, args []string, std stdio) error {
	limit := 20
	env, done, err := openReports(ctx, "history", args, std, true, false, func(fs *flag.FlagSet) {
		fs.IntVar(&limit, "limit", 20, "runs to show, newest first")
	})
	if err != nil {
		return err
	}
	defer done()
	runs, err := store.ReportHistory(ctx, env.pool, env.id, limit)
	if err != nil {
		return err
	}
	printReportHistory(std.out, runs)
	return nil
}

// printReportHistory writes runs and their deliveries for a person.
func printReportHistory(w io.Writer, runs []store.ReportRun) {
	stamp := func(t interface{ Format(string) string }) string { return t.Format("2006-01-02 15:04:05") }
	for _, r := range runs {
		fire := "-"
		if r.FireAt != nil {
			fire = stamp(*r.FireAt)
		}
		fmt.Fprintf(w, "run %d  %s  fire %s  %s", r.ID, r.Trigger, fire, r.Status)
		if r.StartedAt != nil {
			fmt.Fprintf(w, "  started %s", stamp(*r.StartedAt))
		}
		if r.FinishedAt != nil {
			fmt.Fprintf(w, "  finished %s", stamp(*r.FinishedAt))
		}
		if r.Error != "" {
			fmt.Fprintf(w, "  error: %s", r.Error)
		}
		fmt.Fprintln(w)
		for _, d := range r.Deliveries {
			fmt.Fprintf(w, "  → %s/%s/%s  %s", d.Channel, d.Account, d.ChatID, d.Status)
			if d.Error != "" {
				fmt.Fprintf(w, "  error: %s", d.Error)
			}
			fmt.Fprintln(w)
		}
	}
}
