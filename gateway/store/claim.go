package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// InboundClaim is what the run that answers an inbound message starts
// from: the message, its session, the session's lease and what the
// session waits for, read in the transaction that took the lease.
type InboundClaim struct {
	Row       InboundRow
	SessionID int64
	// Answer: the message is still to be answered and the run holds its
	// session's lease. Without it the message was answered already
	// (Status) or the session is Busy.
	Answer bool
	Busy   bool
	// Older: the run holds the lease, but an older message of the session
	// still waits; it goes first (answers keep the users' order).
	Older      bool
	Pending    Pending
	HasPending bool
	// Session is the session's history and recent skills, read with the
	// claim when the run is to answer and the caller asked for them.
	Session *SessionRead
}

// HistoryQuery is how much of a session's history a run reads: at most
// Limit messages, none before Since. A zero Limit reads none.
type HistoryQuery struct {
	Limit int
	Since time.Time
}

// SessionRead is a session's history and the skills its recent runs used
// (HistoryAndRecentTools), read once for a run.
type SessionRead struct {
	History     []HistoryEntry
	RecentTools []string
}

// ClaimInbound begins the run runID of holder on inbound message id, in
// one transaction (issue 39: it was six): while the message is pending,
// its session is created or marked active at now and the session's lease
// is taken until expires, in one statement that reads the message's
// session key; then the message is read under the lease (a run that held
// it may have answered it), with whether an older message waits, and what
// the session waits for is read; and when the run is to answer, the
// history hq asks for with the session's recent skills (issue 39: a
// transaction of their own before). Every statement after the lease sees
// what a run that held it committed: the session's write waits for that
// run's commit, whose transaction locked the row (HoldSessionLease,
// EndSessionLease).
//
// Its statements run their generic plans (InGenericTx says why). A busy
// session writes nothing (the transaction rolls back). A message
// no longer pending is returned with no session. It returns ErrNotFound
// for an unknown id.
func ClaimInbound(ctx context.Context, db TxBeginner, id int64, holder, runID string, now, expires time.Time, hq HistoryQuery) (InboundClaim, error) {
	var c InboundClaim
	tx, err := db.BeginTx(ctx, GenericPlans)
	if err != nil {
		return c, fmt.Errorf("store: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	lease := SessionLease{InboundID: id, Holder: holder, RunID: runID}
	sessionID, key, ok, err := upsertSessionOf(ctx, tx, lease, now, expires)
	if errors.Is(err, pgx.ErrNoRows) { // unknown, or answered before
		if c.Row, err = GetInbound(ctx, tx, id); err == nil && c.Row.Status == InboundPending {
			// The claim read it as not pending in this transaction; it
			// never becomes pending again. Its job retries.
			err = fmt.Errorf("store: claim inbound %d: pending, yet not claimable", id)
		}
		return c, err
	}
	if err != nil {
		return c, err
	}
	c.SessionID = sessionID
	if !ok {
		c.Busy = true
		return c, nil
	}
	if c.Row, c.Older, err = inboundInSession(ctx, tx, id, key); err != nil {
		return c, err
	}
	if c.Pending, c.HasPending, err = GetPending(ctx, tx, c.SessionID); err != nil {
		return c, err
	}
	c.Answer = c.Row.Status == InboundPending && !c.Older
	if c.Answer && hq.Limit > 0 {
		var r SessionRead
		if r.History, r.RecentTools, err = HistoryAndRecentTools(ctx, tx, c.SessionID, hq.Limit, hq.Since); err != nil {
			return c, err
		}
		c.Session = &r
	}
	if err := tx.Commit(ctx); err != nil {
		return InboundClaim{}, fmt.Errorf("store: commit: %w", err)
	}
	return c, nil
}
