package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SessionLease says which run answers a session now. It lives on the
// session's row (migration 00036) and is held while its run id is set, it
// has not expired and its message is still pending: marking the message
// answered ends it.
type SessionLease struct {
	SessionID int64
	InboundID int64  // the message being answered
	Holder    string // the replica that renews it
	RunID     string // the run; only it may end the lease
}

// leaseFreeSQL is true of a session row s whose lease nobody holds at the
// time in parameter %[1]s: none was taken, it expired, or the message it
// was taken for is no longer pending (answered, or erased).
const leaseFreeSQL = `(s.lease_run_id IS NULL OR s.lease_expires_at <= %[1]s
   OR NOT EXISTS (SELECT 1 FROM inbound_messages m WHERE m.id = s.lease_inbound_id AND m.status = 'pending'))`

// upsertSessionSQL creates the session or marks it active, and takes its
// lease for the run in $3 unless another run holds it, in one row write.
// The session's key and the lease's message come from %s, a query of at
// most one row (channel, account, chat_id, user_id, inbound_id) over the
// parameters from $5 on. It returns the session's id and key, and whether
// the run got the lease. The lease columns are NULL when no run asks for
// one; then the lease is left as it is (a lapsed one still names the
// message the sweep must hand on).
const upsertSessionSQL = `
INSERT INTO sessions AS s (channel, account, chat_id, user_id, created_at, last_active_at,
                           lease_inbound_id, lease_holder, lease_run_id, lease_expires_at)
SELECT k.channel, k.account, k.chat_id, k.user_id, $1, $1, k.inbound_id, $2, $3, $4 FROM (%s) k
ON CONFLICT (channel, account, chat_id, user_id) DO UPDATE
   SET (last_active_at, lease_inbound_id, lease_holder, lease_run_id, lease_expires_at) = (
       SELECT EXCLUDED.last_active_at,
              CASE WHEN f.free THEN EXCLUDED.lease_inbound_id ELSE s.lease_inbound_id END,
              CASE WHEN f.free THEN EXCLUDED.lease_holder ELSE s.lease_holder END,
              CASE WHEN f.free THEN EXCLUDED.lease_run_id ELSE s.lease_run_id END,
              CASE WHEN f.free THEN EXCLUDED.lease_expires_at ELSE s.lease_expires_at END
         FROM (SELECT $3::text IS NOT NULL AND %s AS free) f)
RETURNING id, coalesce(lease_run_id = $3, false), channel, account, chat_id, user_id`

var (
	// upsertSessionByKeySQL takes the key as given ($5-$8) and the lease's
	// message in $9.
	upsertSessionByKeySQL = fmt.Sprintf(upsertSessionSQL,
		`SELECT $5::text AS channel, $6::text AS account, $7::text AS chat_id, $8::text AS user_id, $9::bigint AS inbound_id`,
		fmt.Sprintf(leaseFreeSQL, "$1"))
	// upsertSessionOfSQL takes the key from message $5, and only while it
	// is pending: the lease is for it.
	upsertSessionOfSQL = fmt.Sprintf(upsertSessionSQL,
		`SELECT channel, account, chat_id, sender_id AS user_id, id AS inbound_id FROM inbound_messages WHERE id = $5 AND status = 'pending'`,
		fmt.Sprintf(leaseFreeSQL, "$1"))
)

// upsertSession returns the id of the session for key, created or marked
// active at now: one row written either way. With a lease (l.RunID set)
// it also takes the session's lease for l until expires, in that same
// write, and ok says whether it did: false while another run holds it.
func upsertSession(ctx context.Context, q Querier, key SessionKey, l SessionLease, now, expires time.Time) (id int64, ok bool, err error) {
	var inbound any // NULL without a lease
	if l.RunID != "" {
		inbound = l.InboundID
	}
	id, _, ok, err = upsertSessionFrom(ctx, q, upsertSessionByKeySQL, l, now, expires,
		key.Channel, key.Account, key.ChatID, key.UserID, inbound)
	return id, ok, err
}

// upsertSessionOf is upsertSession for the session of inbound message
// l.InboundID, read in the same statement, while the message is pending
// (issue 39: a read less per claim). It returns pgx.ErrNoRows, writing
// nothing, when the message is unknown or no longer pending.
func upsertSessionOf(ctx context.Context, q Querier, l SessionLease, now, expires time.Time) (id int64, key SessionKey, ok bool, err error) {
	return upsertSessionFrom(ctx, q, upsertSessionOfSQL, l, now, expires, l.InboundID)
}

// upsertSessionFrom runs one form of upsertSessionSQL.
//
// Its check of the lease's message reads what was committed when the
// statement began; if a run committed its answer while this statement
// waited for the session's row (the answer's transaction locks it), the
// lease looks held though it ended. So a refusal is checked once more in
// a statement of its own (ClaimSessionLease), which sees that commit.
func upsertSessionFrom(ctx context.Context, q Querier, sql string, l SessionLease, now, expires time.Time, src ...any) (id int64, key SessionKey, ok bool, err error) {
	var holder, run, until any // NULL without a lease
	if l.RunID != "" {
		holder, run, until = l.Holder, l.RunID, expires
	}
	args := append([]any{now, holder, run, until}, src...)
	err = q.QueryRow(ctx, sql, args...).Scan(&id, &ok, &key.Channel, &key.Account, &key.ChatID, &key.UserID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, key, false, err
	}
	if err != nil {
		return 0, key, false, fmt.Errorf("store: session: %w", err)
	}
	if ok || l.RunID == "" {
		return id, key, ok, nil
	}
	l.SessionID = id
	ok, err = ClaimSessionLease(ctx, q, l, now, expires)
	return id, key, ok, err
}

// ClaimSessionLease takes the session's lease for l until expires, or
// takes it over when the one there lapsed before now or ended. ok is
// false while another run's lease is live: the session is busy.
func ClaimSessionLease(ctx context.Context, q Querier, l SessionLease, now, expires time.Time) (ok bool, err error) {
	tag, err := q.Exec(ctx, `
UPDATE sessions s SET lease_inbound_id = $2, lease_holder = $3, lease_run_id = $4, lease_expires_at = $5
 WHERE s.id = $1 AND `+fmt.Sprintf(leaseFreeSQL, "$6"), l.SessionID, l.InboundID, l.Holder, l.RunID, expires, now)
	if err != nil {
		return false, fmt.Errorf("store: claim session %d: %w", l.SessionID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// LeaseRef names a run's lease: its session and its run.
type LeaseRef struct {
	SessionID int64
	RunID     string
}

// RenewSessionLeases extends the leases of holder's runs to expires, in
// one statement for the whole replica. It returns the runs whose lease it
// renewed; a run missing from it has lost its lease (lapsed and taken
// over). A lease its run ended by answering may be renewed too: that
// keeps it ended (its message is not pending).
func RenewSessionLeases(ctx context.Context, q Querier, holder string, leases []LeaseRef, expires time.Time) ([]string, error) {
	sessions := make([]int64, len(leases))
	runs := make([]string, len(leases))
	for i, l := range leases {
		sessions[i], runs[i] = l.SessionID, l.RunID
	}
	rows, err := q.Query(ctx, `
UPDATE sessions s SET lease_expires_at = $4
  FROM unnest($2::bigint[], $3::text[]) AS r(session_id, run_id)
 WHERE s.id = r.session_id AND s.lease_run_id = r.run_id AND s.lease_holder = $1
RETURNING r.run_id`, holder, sessions, runs, expires)
	if err != nil {
		return nil, fmt.Errorf("store: renew session leases: %w", err)
	}
	renewed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: renew session leases: %w", err)
	}
	return renewed, nil
}

// HoldSessionLease locks the session's row for the rest of tx and reports
// whether runID still holds its lease. The transaction that commits a
// run's answer calls it first: marking the message answered then ends
// the lease, and a takeover (a claim or a sweep, which write the row)
// waits for that commit and sees the message answered. held is false when
// the lease lapsed and another run took it: this run must not commit.
func HoldSessionLease(ctx context.Context, tx pgx.Tx, sessionID int64, runID string) (held bool, err error) {
	err = tx.QueryRow(ctx, `SELECT true FROM sessions WHERE id = $1 AND lease_run_id = $2 FOR NO KEY UPDATE`,
		sessionID, runID).Scan(&held)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: hold session lease %d: %w", sessionID, err)
	}
	return held, nil
}

// EndSessionLease ends runID's lease of the session without an answer (the
// run failed, was busy, or is stopping). ok is false when the run no
// longer holds it: it lapsed and another run took it over.
func EndSessionLease(ctx context.Context, q Querier, sessionID int64, runID string) (ok bool, err error) {
	tag, err := q.Exec(ctx, `
UPDATE sessions SET lease_inbound_id = NULL, lease_holder = NULL, lease_run_id = NULL, lease_expires_at = NULL
 WHERE id = $1 AND lease_run_id = $2`, sessionID, runID)
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

// TakeLapsedLeases ends up to limit leases that lapsed before now while
// their message was still pending and returns them, in tx. It looks from
// the pending messages, which are few, not from the sessions, which keep
// the leases their runs ended by answering. Rows another replica's sweep
// (or an answer's commit) has locked are skipped, so each lapsed lease is
// taken by exactly one sweep; the caller hands each session on in the
// same tx.
func TakeLapsedLeases(ctx context.Context, tx pgx.Tx, now time.Time, limit int) ([]LapsedLease, error) {
	rows, err := tx.Query(ctx, `
WITH lapsed AS (
  SELECT s.id, s.lease_inbound_id, s.lease_holder FROM inbound_messages m
    JOIN sessions s ON s.channel = m.channel AND s.account = m.account AND s.chat_id = m.chat_id
     AND s.user_id = m.sender_id AND s.lease_inbound_id = m.id
   WHERE m.status = 'pending' AND s.lease_expires_at <= $1
   ORDER BY s.lease_expires_at LIMIT $2 FOR UPDATE OF s SKIP LOCKED
)
UPDATE sessions s SET lease_inbound_id = NULL, lease_holder = NULL, lease_run_id = NULL, lease_expires_at = NULL
  FROM lapsed WHERE s.id = lapsed.id
RETURNING lapsed.id, lapsed.lease_inbound_id, lapsed.lease_holder`, now, limit)
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
// as inboundInSession is, for the same reason.
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
