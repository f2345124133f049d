package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/user"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store"
)

// memoryCommands are the subcommands of `hermes memory`: an operator's
// answer to an employee's request about the notes Hermes keeps on them
// (see, delete, take a copy: PIPL). Each writes a memory_audit row.
var memoryCommands = map[string]command{
	"list":   {"print a user's memories, numbered as /memory shows them: hermes memory list --corp CORP --user USER", runMemoryList},
	"purge":  {"delete every memory of a user, and every stored copy of their texts: hermes memory purge --corp CORP --user USER", runMemoryPurge},
	"export": {"print a user's memories as JSON, for their data request: hermes memory export --corp CORP --user USER", runMemoryExport},
}

// runMemory dispatches `hermes memory <subcommand>`.
func runMemory(ctx context.Context, args []string, std stdio) error {
	return runSubcommand(ctx, "memory", memoryCommands, args, std)
}

// memoryAction is what a subcommand does within its transaction, writing
// its output to w; it returns the number of memories it showed or
// deleted, for the audit row.
type memoryAction func(ctx context.Context, tx pgx.Tx, o memory.Owner, now time.Time, w io.Writer) (int, error)

// runMemoryAction parses the flags shared by every subcommand, then runs
// act and writes its audit row in one transaction: what was done is
// recorded, and what is recorded was done. The output is held until the
// commit, so that nothing is shown (or said deleted) unrecorded.
func runMemoryAction(ctx context.Context, name string, args []string, std stdio, act memoryAction) error {
	return runAuditedAction(ctx, "memory", name, name, args, std, act)
}

// runAuditedAction is runMemoryAction for the subcommand name of group
// (memory, privacy), audited as action.
func runAuditedAction(ctx context.Context, group, name, action string, args []string, std stdio, act memoryAction) error {
	fs, path := newFlags(group+" "+name, std.err)
	var o memory.Owner
	fs.StringVar(&o.CorpID, "corp", "", "the user's corp id (required)")
	fs.StringVar(&o.UserID, "user", "", "the user's id in the corp (required)")
	admin := fs.String("admin", defaultAdmin(), "who asks, for the audit record")
	cfg, err := parseAndLoad(fs, path, args)
	if err != nil {
		return err
	}
	if o.CorpID == "" || o.UserID == "" || *admin == "" || fs.NArg() > 0 {
		fmt.Fprintf(std.err, "usage: hermes %s %s [--config FILE] --corp CORP --user USER [--admin NAME]\n", group, name)
		return errUsage
	}
	pool, err := store.Open(ctx, cfg.Database.URL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	var out bytes.Buffer
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		now := time.Now()
		n, err := act(ctx, tx, o, now, &out)
		if err != nil {
			return err
		}
		return memory.Audit(ctx, tx, *admin, action, o, n, now)
	})
	if err != nil {
		return err
	}
	_, err = out.WriteTo(std.out)
	return err
}

// defaultAdmin is the operator's login name, or "cli" when it is unknown
// (a container without a passwd entry).
func defaultAdmin() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "cli"
}

func runMemoryList(ctx context.Context, args []string, std stdio) error {
	return runMemoryAction(ctx, "list", args, std, func(ctx context.Context, tx pgx.Tx, o memory.Owner, now time.Time, w io.Writer) (int, error) {
		ms, err := memory.List(ctx, tx, o, now)
		if err != nil {
			return 0, err
		}
		printMemories(w, o, ms)
		return len(ms), nil
	})
}

// printMemories writes one line per memory: its number in /memory, kind,
// when and the text, personal numbers masked as in a trace (export has
// them whole).
func printMemories(w io.Writer, o memory.Owner, ms []memory.Memory) {
	if len(ms) == 0 {
		fmt.Fprintf(w, "no memories of %s/%s\n", o.CorpID, o.UserID)
		return
	}
	for i, m := range ms {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", i+1, m.Kind, m.CreatedAt.Local().Format("2006-01-02 15:04"), agent.MaskedText(m.Text))
	}
}

func runMemoryPurge(ctx context.Context, args []string, std stdio) error {
	return runMemoryAction(ctx, "purge", args, std, func(ctx context.Context, tx pgx.Tx, o memory.Owner, _ time.Time, w io.Writer) (int, error) {
		n, err := memory.Forget(ctx, tx, o, nil)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(w, "deleted %d memories of %s/%s, and every stored copy of their texts\n", n, o.CorpID, o.UserID)
		return int(n), nil
	})
}

func runMemoryExport(ctx context.Context, args []string, std stdio) error {
	return runMemoryAction(ctx, "export", args, std, func(ctx context.Context, tx pgx.Tx, o memory.Owner, _ time.Time, w io.Writer) (int, error) {
		out, err := memory.Export(ctx, tx, o)
		if err != nil {
			return 0, err
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return len(out), enc.Encode(out)
	})
}
