package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Pending kinds: what a session waits for from its user.
const (
	PendingConfirm  = "confirm"  // a skill call waiting for 「确认」
	PendingFollowup = "followup" // a task waiting for the answer to a question
)

// Pending is what a session waits for from its user.
type Pending struct {
	SessionID int64
	Kind      string
	Payload   json.RawMessage
	RunID     string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// SetPending records what a session now waits for, replacing anything it
// waited for before.
func SetPending(ctx context.Context, q Querier, p Pending) error {
	_, err := q.Exec(ctx, `
INSERT INTO session_pending (session_id, kind, payload, run_id, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (session_id) DO UPDATE SET kind = EXCLUDED.kind, payload = EXCLUDED.payload,
  run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
		p.SessionID, p.Kind, string(p.Payload), p.RunID, p.CreatedAt, p.ExpiresAt)
	if err != nil {
		return fmt.Errorf("store: set pending: %w", err)
	}
	return nil
}

// TakePending removes and returns what a session waited for; ok is false
// when it waited for nothing. Whatever the user writes next resolves it, so
// it is taken, never just read.
func TakePending(ctx context.Context, q Querier, sessionID int64) (p Pending, ok bool, err error) {
	var payload string
	err = q.QueryRow(ctx, `
DELETE FROM session_pending WHERE session_id = $1
RETURNING session_id, kind, payload::text, run_id, created_at, expires_at`, sessionID).Scan(
		&p.SessionID, &p.Kind, &payload, &p.RunID, &p.CreatedAt, &p.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("store: take pending: %w", err)
	}
	p.Payload = json.RawMessage(payload)
	return p, true, nil
}

// GetPending returns what a session waits for without resolving it.
func GetPending(ctx context.Context, q Querier, sessionID int64) (p Pending, ok bool, err error) {
	var payload string
	err = q.QueryRow(ctx, `
SELECT session_id, kind, payload::text, run_id, created_at, expires_at FROM session_pending WHERE session_id = $1`,
		sessionID).Scan(&p.SessionID, &p.Kind, &payload, &p.RunID, &p.CreatedAt, &p.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("store: get pending: %w", err)
	}
	p.Payload = json.RawMessage(payload)
	return p, true, nil
}

// ClearPending removes what a session waited for.
func ClearPending(ctx context.Context, q Querier, sessionID int64) error {
	if _, err := q.Exec(ctx, `DELETE FROM session_pending WHERE session_id = $1`, sessionID); err != nil {
		return fmt.Errorf("store: clear pending: %w", err)
	}
	return nil
}
