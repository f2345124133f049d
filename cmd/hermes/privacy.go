package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/privacy"
)

// privacyCommands are the subcommands of `hermes privacy`: an operator's
// answer to an employee's data request covering everything Hermes holds
// about them (memories, messages, conversation, run traces, replies,
// attachments, pending calls, reports they own). Each writes a
// memory_audit row (privacy_export, privacy_erase), as `hermes memory`.
var privacyCommands = map[string]command{
	"export": {"print everything Hermes holds about a user as JSON, for their data request: hermes privacy export --corp CORP --user USER", runPrivacyExport},
	"erase":  {"erase everything Hermes holds about a user: hermes privacy erase --corp CORP --user USER", runPrivacyErase},
}

// runPrivacy dispatches `hermes privacy <subcommand>`.
func runPrivacy(ctx context.Context, args []string, std stdio) error {
	return runSubcommand(ctx, "privacy", privacyCommands, args, std)
}

func runPrivacyExport(ctx context.Context, args []string, std stdio) error {
	return runAuditedAction(ctx, "privacy", "export", privacy.AuditExport, args, std, func(ctx context.Context, tx pgx.Tx, o memory.Owner, now time.Time, w io.Writer) (int, error) {
		e, err := privacy.ExportOf(ctx, tx, privacy.Person(o), now)
		if err != nil {
			return 0, err
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return e.Count(), enc.Encode(e)
	})
}

func runPrivacyErase(ctx context.Context, args []string, std stdio) error {
	return runAuditedAction(ctx, "privacy", "erase", privacy.AuditErase, args, std, func(ctx context.Context, tx pgx.Tx, o memory.Owner, _ time.Time, w io.Writer) (int, error) {
		e, err := privacy.Erase(ctx, tx, privacy.Person(o))
		if err != nil {
			return 0, err
		}
		tables := make([]string, 0, len(e.Changed))
		for t := range e.Changed {
			tables = append(tables, t)
		}
		sort.Strings(tables)
		fmt.Fprintf(w, "erased what Hermes held about %s/%s; rows kept for counts now stand under %s\n", o.CorpID, o.UserID, e.Pseudonym)
		for _, t := range tables {
			fmt.Fprintf(w, "%s\t%d\n", t, e.Changed[t])
		}
		return e.Total(), nil
	})
}
