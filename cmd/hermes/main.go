package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/hermes-gw/hermes/gateway"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdio stdio) error
}

var commands = map[string]command{
	"serve":     {"run the gateway: platform callbacks, agent workers and delivery", runServe},
	"migrate":   {"apply database migrations and exit", runMigrate},
	"chat":      {"talk to the agent in the terminal (console channel)", runChat},
	"demo":      {"run Hermes on embedded defaults and play a short conversation", runDemo},
	"skills":    {"check skill definitions, import skills from OpenAPI", runSkills},
	"runs":      {"find agent runs (runs list) and print one's trace (runs show)", runRuns},
	"admin":     {"manage console accounts (admin create)", runAdmin},
	"reports":   {"scheduled reports: list, add, run-now, pause, resume, delete, history", runReports},
	"words":     {"print every word Hermes says (messages:), with the values in effect, as YAML", runWords},
	"memory":    {"an employee's memories: list, purge, export (their data request); audited", runMemory},
	"knowledge": {"the company's documents the agent searches: add, list, delete, search --as USER", runKnowledge},
	"alerts":    {"the alert rules: list (state and incidents), silence a rule for a while (recorded)", runAlerts},
	"privacy":   {"everything Hermes holds about an employee: export, erase (their data request); audited", runPrivacy},
	"doctor":    {"check config, database, model, channel credentials and skill endpoints; print fixes", runDoctor},
	"version": {"print the version", func(_ context.Context, _ []string, io stdio) error {
		_, err := fmt.Fprintln(io.out, "hermes", version)
		return err
	}},
}

// stdio are a command's standard streams (tests pass their own).
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// errUsage makes main print usage and exit 2.
var errUsage = errors.New("usage")

// errHelp ends a command whose help was asked for and printed: exit 0.
var errHelp = errors.New("help shown")

// isHelp reports an argument asking for help instead of a command.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

func main() {
	gateway.Version = version
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
}

func run(ctx context.Context, args []string, std stdio) int {
	stderr := std.err
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if isHelp(args[0]) {
		// "hermes help serve" is "hermes serve --help".
		if len(args) > 1 && commands[args[1]].run != nil {
			args = []string{args[1], "--help"}
		} else {
			usage(std.out)
			return 0
		}
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "hermes: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err := cmd.run(ctx, args[1:], std); err != nil {
		switch {
		case errors.Is(err, errHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		}
		fmt.Fprintf(stderr, "hermes %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: hermes <command> [flags]")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "  %-8s %s\n", "help", "this list; hermes help COMMAND (or hermes COMMAND --help) shows a command's flags")
}
