package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The console's exports: the messages and the runs of a time range, oldest
// first, handed to fn one row at a time so that the caller streams them
// (no slice of the whole range is held), at most limit rows.

// ExportMessage is one message of a conversation as exported.
type ExportMessage struct {
	At                               time.Time
	SessionID                        int64
	Channel, Account, ChatID, UserID string
	Role, Content, RunID             string
}

// ExportMessages calls fn for each message created in [since, until),
// oldest first, at most limit; fn's error stops the export and is
// returned wrapped.
func ExportMessages(ctx context.Context, q Querier, since, until time.Time, limit int, fn func(ExportMessage) error) error {
	return exportRows(ctx, q, "messages", `
SELECT m.created_at, s.id, s.channel, s.account, s.chat_id, s.user_id, m.role, m.content, coalesce(m.run_id, '')
FROM messages m JOIN sessions s ON s.id = m.session_id
WHERE m.created_at >= $1 AND m.created_at < $2 ORDER BY m.created_at, m.id LIMIT $3`,
		[]any{since, until, limit}, func(row pgx.Rows) error {
			var m ExportMessage
			if err := row.Scan(&m.At, &m.SessionID, &m.Channel, &m.Account, &m.ChatID, &m.UserID, &m.Role, &m.Content, &m.RunID); err != nil {
				return err
			}
			return fn(m)
		})
}

// ExportRun is one run as exported: the run, whom it answered and what.
type ExportRun struct {
	ID                               string
	StartedAt, FinishedAt            time.Time
	Channel, Account, ChatID, UserID string
	Model, StopReason, Error         string
	PromptTokens, CompletionTokens   int
	Text, Reply                      string
}

// ExportRuns calls fn for each run started in [since, until), oldest
// first, at most limit; fn's error stops the export and is returned
// wrapped.
func ExportRuns(ctx context.Context, q Querier, since, until time.Time, limit int, fn func(ExportRun) error) error {
	return exportRows(ctx, q, "runs", `
SELECT r.id, r.started_at, r.finished_at, s.channel, s.account, s.chat_id, s.user_id, r.model, r.stop_reason, r.error,
       r.prompt_tokens, r.completion_tokens, i.text, r.reply
FROM runs r JOIN sessions s ON s.id = r.session_id JOIN inbound_messages i ON i.id = r.inbound_id
WHERE r.started_at >= $1 AND r.started_at < $2 ORDER BY r.started_at, r.id LIMIT $3`,
		[]any{since, until, limit}, func(row pgx.Rows) error {
			var r ExportRun
			if err := row.Scan(&r.ID, &r.StartedAt, &r.FinishedAt, &r.Channel, &r.Account, &r.ChatID, &r.UserID, &r.Model,
				&r.StopReason, &r.Error, &r.PromptTokens, &r.CompletionTokens, &r.Text, &r.Reply); err != nil {
				return err
			}
			return fn(r)
		})
}

func exportRows(ctx context.Context, q Querier, what, sql string, args []any, each func(pgx.Rows) error) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("store: export %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return fmt.Errorf("store: export %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: export %s: %w", what, err)
	}
	return nil
}
