package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/channels"
)

// SessionKey names a session: one user in one chat of one app.
type SessionKey struct {
	Channel, Account, ChatID, UserID string
}

// SessionKeyOf is the key of the session a message in belongs to: its
// sender's in its chat.
func SessionKeyOf(in channels.Inbound) SessionKey {
	return SessionKey{Channel: in.Channel, Account: in.Account, ChatID: in.ChatID, UserID: in.Sender.UserID}
}

func (k SessionKey) String() string {
	return k.Channel + "/" + k.Account + "/" + k.ChatID + "/" + k.UserID
}

// HistoryEntry is one earlier turn of a session.
type HistoryEntry struct {
	Role    string // "user" | "assistant"
	Content string
}

// EnsureSession returns the id of the session for key, creating it if
// needed. An existing session costs one read and no write (no commit to
// wait for); TouchSession marks it active with the answer.
func EnsureSession(ctx context.Context, q Querier, key SessionKey, now time.Time) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `SELECT id FROM sessions WHERE channel = $1 AND account = $2 AND chat_id = $3 AND user_id = $4`,
		key.Channel, key.Account, key.ChatID, key.UserID).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("store: session: %w", err)
	}
	id, _, err = upsertSession(ctx, q, key, SessionLease{}, now, time.Time{})
	return id, err
}

// TouchSession records that a session was active at now.
func TouchSession(ctx context.Context, q Querier, id int64, now time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE sessions SET last_active_at = $2 WHERE id = $1`, id, now); err != nil {
		return fmt.Errorf("store: touch session: %w", err)
	}
	return nil
}

// RecentHistory returns up to limit most recent history entries of a
// session written after since, oldest first. A conversation idle for longer
// than the caller's expiry thus starts afresh.
func RecentHistory(ctx context.Context, q Querier, sessionID int64, limit int, since time.Time) ([]HistoryEntry, error) {
	rows, err := q.Query(ctx, recentHistorySQL, sessionID, limit, since)
	if err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	return collectHistory(rows)
}

const recentHistorySQL = `
SELECT role, content FROM (
  SELECT id, role, content FROM messages
  WHERE session_id = $1 AND created_at > GREATEST($3, (SELECT history_from FROM sessions WHERE id = $1))
  ORDER BY id DESC LIMIT $2
) recent ORDER BY id`

func collectHistory(rows pgx.Rows) ([]HistoryEntry, error) {
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (HistoryEntry, error) {
		var e HistoryEntry
		err := row.Scan(&e.Role, &e.Content)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	return out, nil
}

// HistoryAndRecentTools is RecentHistory and RecentTools in one round trip
// (issue 39: they were two per answered message), on a pool, a
// connection or in a transaction.
//
// Both are planned as Postgres chooses by their costs (costedPlansSQL),
// even in an InGenericTx (the claim's): a generic plan forced on them,
// made while the messages table was young, read every message of the
// session and sorted it (3 ms for a session of 5,000), where a plan for a
// limit of 10 reads 10 through the session's index.
func HistoryAndRecentTools(ctx context.Context, db Batcher, sessionID int64, limit int, since time.Time) ([]HistoryEntry, []string, error) {
	var b pgx.Batch
	b.Queue(costedPlansSQL)
	b.Queue(recentHistorySQL, sessionID, limit, since)
	b.Queue(recentToolsSQL, sessionID, since)
	br := db.SendBatch(ctx, &b)
	defer br.Close() //nolint:errcheck // the errors are the queries'
	if _, err := br.Exec(); err != nil {
		return nil, nil, fmt.Errorf("store: history: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("store: history: %w", err)
	}
	history, err := collectHistory(rows)
	if err != nil {
		return nil, nil, err
	}
	if rows, err = br.Query(); err != nil {
		return nil, nil, fmt.Errorf("store: recent tools: %w", err)
	}
	tools, err := collectTools(rows)
	return history, tools, err
}

// InsertTurn appends the user's message and the reply to a session's
// history. runID may be empty for replies no agent run produced.
func InsertTurn(ctx context.Context, q Querier, sessionID, inboundID int64, runID, userText, reply string, at time.Time) error {
	_, err := q.Exec(ctx, `
INSERT INTO messages (session_id, inbound_id, run_id, role, content, created_at)
VALUES ($1, $2, NULLIF($3, ''), 'user', $4, $6), ($1, $2, NULLIF($3, ''), 'assistant', $5, $6)`,
		sessionID, inboundID, runID, userText, reply, at)
	if err != nil {
		return fmt.Errorf("store: insert turn: %w", err)
	}
	return nil
}

// ResetSession starts the session afresh at now: earlier history is no
// longer the model's context (/reset).
func ResetSession(ctx context.Context, q Querier, id int64, now time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE sessions SET history_from = $2, last_active_at = $2 WHERE id = $1`, id, now); err != nil {
		return fmt.Errorf("store: reset session: %w", err)
	}
	return nil
}

// RecentTools are the skills the session's previous run called, for
// offering them again to a follow-up ("那上个月呢"): the run of the latest
// answer in the session's history since since.
func RecentTools(ctx context.Context, q Querier, sessionID int64, since time.Time) ([]string, error) {
	rows, err := q.Query(ctx, recentToolsSQL, sessionID, since)
	if err != nil {
		return nil, fmt.Errorf("store: recent tools: %w", err)
	}
	return collectTools(rows)
}

const recentToolsSQL = `
SELECT DISTINCT s.tool FROM run_steps s
WHERE s.kind = 'tool' AND s.tool <> '' AND s.run_id = (
  SELECT m.run_id FROM messages m
  WHERE m.session_id = $1 AND m.role = 'assistant' AND m.run_id IS NOT NULL
    AND m.created_at > GREATEST($2, (SELECT history_from FROM sessions WHERE id = $1))
  ORDER BY m.id DESC LIMIT 1)
ORDER BY s.tool`

func collectTools(rows pgx.Rows) ([]string, error) {
	tools, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: recent tools: %w", err)
	}
	return tools, nil
}
