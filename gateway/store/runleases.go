package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SessionLease says which run answers a session now.
type SessionLease struct {
	SessionID int64
	InboundID int64  // the message being answered
	Holder    string // the replica that renews it
	RunID     string // the run; only it may end the lease
}

// ClaimSessionLease takes the session's lease for l until expires, or
// takes it over when the one there lapsed before now. ok is false while
// another run's lease is live: the session is busy.
func ClaimSessionLease(ctx context.Context, q Querier, l SessionLease, now, expires time.Time) (ok bool, err error) {
	var got string
	err = q.QueryRow(ctx, `
INSERT INTO session_leases (session_id, inbound_id, holder, run_id, expires_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (session_id) DO UPDATE
   SET inbound_id = EXCLUDED.inbound_id, holder = EXCLUDED.holder, run_id = EXCLUDED.run_id, expires_at = EXCLUDED.expires_at
 WHERE session_leases.expires_at <= $6
RETURNING run_id`, l.SessionID, l.InboundID, l.Holder, l.RunID, expires, now).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: claim session %d: %w", l.SessionID, err)
	}
	return true, nil
}

// RenewSessionLeases extends the leases of holder's runs to expires, in
// one statement for the whole replica. It returns the runs whose lease it
// renewed; a run missing from it has lost its lease (lapsed and taken over).
func RenewSessionLeases(ctx context.Context, q Querier, holder string, runIDs []string, expires time.Time) ([]string, error) {
	rows, err := q.Query(ctx, `
UPDATE session_leases SET expires_at = $3 WHERE holder = $1 AND run_id = ANY($2) RETURNING run_id`,
		holder, runIDs, expires)
	if err != nil {
		return nil, fmt.Errorf("store: renew session leases: %w", err)
	}
	renewed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: renew session leases: %w", err)
	}
	return renewed, nil
}

// EndSessionLease deletes runID's lease of the session. ok is false when
// the run no longer holds it: it lapsed and another run took it over, so
// this run must not commit its answer.
func EndSessionLease(ctx context.Context, q Querier, sessionID int64, runID string) (ok bool, err error) {
	tag, err := q.Exec(ctx, `DELETE FROM session_leases WHERE session_id = $1 AND run_id = $2`, sessionID, runID)
	if err != nil {
		return false, fmt.Errorf("store: end session lease %d: %w", sessionID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// LapsedLease is a lease whose holder stopped renewing it.
type LapsedLease struct {
	SessionID int64
	InboundID int64  // the message its run was answering
	Holder    string // the replica that stopped renewing it
}

// TakeLapsedLeases deletes up to limit leases that lapsed before now and
// returns them, in tx. Rows another replica's sweep has locked are
// skipped, so each lapsed lease is taken by exactly one sweep; the caller
// hands each session on in the same tx.
func TakeLapsedLeases(ctx context.Context, tx pgx.Tx, now time.Time, limit int) ([]LapsedLease, error) {
	rows, err := tx.Query(ctx, `
WITH lapsed AS (
  SELECT session_id FROM session_leases WHERE expires_at <= $1
  ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED
)
DELETE FROM session_leases l USING lapsed WHERE l.session_id = lapsed.session_id
RETURNING l.session_id, l.inbound_id, l.holder`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("store: lapsed session leases: %w", err)
	}
	lapsed, err := pgx.CollectRows(rows, pgx.RowToStructByPos[LapsedLease])
	if err != nil {
		return nil, fmt.Errorf("store: lapsed session leases: %w", err)
	}
	return lapsed, nil
}

// OldestPendingInSession returns the session's oldest message still to
// answer and its channel; ok is false when none waits. Planned per call,
// as StatusInSession is, for the same reason.
func OldestPendingInSession(ctx context.Context, q Querier, sessionID int64) (id int64, channel string, ok bool, err error) {
	err = q.QueryRow(ctx, `
SELECT m.id, m.channel FROM sessions s
  JOIN inbound_messages m ON m.channel = s.channel AND m.account = s.account AND m.chat_id = s.chat_id
   AND m.sender_id = s.user_id AND m.status = 'pending'
 WHERE s.id = $1 ORDER BY m.id LIMIT 1`, pgx.QueryExecModeExec, sessionID).Scan(&id, &channel)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("store: oldest pending of session %d: %w", sessionID, err)
	}
	return id, channel, true, nil
}
