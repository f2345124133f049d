package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
)

// doctorTimeout bounds the whole of `hermes doctor`.
const doctorTimeout = 2 * time.Minute

// errChecksFailed makes doctor exit 1 after its table.
var errChecksFailed = errors.New("some checks failed")

// runDoctor is `hermes doctor --config F`: it checks the configuration,
// the database, the model endpoint, each channel's credentials and API and
// each skill's endpoint, prints one line per check with the fix for each
// failure, and exits 1 when any failed. It sends no message and calls no
// skill.
func runDoctor(ctx context.Context, args []string, std stdio) error {
	fs, path := newFlags("doctor", std.err)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	cfg, err := config.LoadConfig(*path)
	if err != nil {
		printChecks(std.out, []channels.Check{{Name: "config", Detail: err.Error(), Fix: "edit the key the message names in " + *path}})
		return errChecksFailed
	}
	// A lazy pool: the doctor reports a database that is down, and still
	// checks the channels and skills.
	poolCfg, err := pgxpool.ParseConfig(cfg.Database.URL)
	if err != nil {
		printChecks(std.out, []channels.Check{{Name: "database", Detail: "database.url unreadable", Fix: "database.url: postgres://user@host:5432/db"}})
		return errChecksFailed
	}
	poolCfg.MaxConns = max(cfg.Database.MaxConns-store.ReservedConns, 1)
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	logger := slog.New(slog.NewTextHandler(std.err, &slog.HandlerOptions{Level: slog.LevelError}))
	checks := doctor(ctx, cfg, gateway.Deps{Pool: pool, Platforms: platforms, Features: newFeatures(), Logger: logger})
	if printChecks(std.out, checks) > 0 {
		return errChecksFailed
	}
	return nil
}

// doctor checks a loaded configuration against the world: the database
// (reachable, migrated), the model endpoint, each channel's credentials and
// API (channels.Doctor), and each skill's endpoint (gateway/ops has the
// checks). It builds the gateway deps name, working no queue, for its
// channels and skills; it changes nothing, sends no message and calls no
// skill. deps.Pool must be set; it may be a pool whose database is down.
func doctor(ctx context.Context, cfg *config.Config, deps gateway.Deps) []channels.Check {
	out := []channels.Check{{Name: "config", OK: true, Detail: "loaded and valid"}}
	out = append(out, ops.CheckDatabase(ctx, deps.Pool)...)
	out = append(out, ops.CheckModel(ctx, cfg.Model))
	deps.Queues, deps.Partial = map[string]int{}, true // build only: work no queue
	gw, err := gateway.New(ctx, cfg, deps)
	if err != nil {
		return append(out, channels.Check{Name: "channels and skills", Detail: err.Error(),
			Fix: "fix the key the message names, then run hermes doctor again"})
	}
	defer gw.Stop(ctx) //nolint:errcheck // works no queue: only closes the MCP sessions; nothing to save
	s := gw.Services()
	out = append(out, ops.CheckChannels(ctx, s.Channels)...)
	out = append(out, ops.CheckCards(ctx, deps.Pool, time.Now())...)
	return append(out, ops.CheckSkills(ctx, s.Skills.Load(), cfg.Skills.BaseURL)...)
}

// printChecks prints the table and returns how many checks failed.
func printChecks(w io.Writer, checks []channels.Check) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	failed := 0
	for _, c := range checks {
		result := "ok"
		if !c.OK {
			result, failed = "FAIL", failed+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, result, oneLine(c.Detail))
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", oneLine(c.Fix))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d checks, %d failed\n", len(checks), failed)
	return failed
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
