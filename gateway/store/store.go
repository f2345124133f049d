package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is returned when a looked-up row does not exist.
var ErrNotFound = errors.New("store: not found")

// ReservedConns are the connections a replica opens beside its pool:
// the job queue's LISTEN connection (River takes it out of the pool for
// good) and the session leases' upkeep's own (KeptConn). Open keeps them
// out of maxConns.
const ReservedConns = 2

// AsyncCommitSQL, queued first in a pgx.Batch, lets the batch's commit
// return before its WAL reaches the disk: for writes a crash of Postgres
// itself may forget (a pacing claim, a model slot). A batch is one
// implicit transaction (one Sync), so a transaction-local setting lasts
// exactly the batch. set_config says so without the warning Postgres logs
// for every SET LOCAL outside BEGIN ("SET LOCAL can only be used in
// transaction blocks"), which flooded its log with one line per send.
const AsyncCommitSQL = `SELECT set_config('synchronous_commit', 'off', true)`

// Open connects to Postgres and checks the connection. maxConns is every
// connection the process may open, the job queue's listener included, so
// the pool holds maxConns - ReservedConns; maxConns ≤ 0 keeps pgx's
// default.
func Open(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse database url: %w", err)
	}
	if maxConns > ReservedConns {
		cfg.MaxConns = maxConns - ReservedConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return pool, nil
}

// Beginner is what *pgxpool.Pool and *pgxpool.Conn have for transactions.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// InTx runs fn in one transaction on db, committing when fn returns nil.
func InTx(ctx context.Context, db Beginner, fn func(tx pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	return commitAfter(ctx, tx, fn)
}

// TxBeginner begins a transaction with options: a *pgxpool.Pool or a
// *pgxpool.Conn.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// GenericPlans begins a transaction whose prepared statements run their
// generic plans, made once per connection, in the same round trip as the
// BEGIN (the simple protocol sends both). InGenericTx says when.
var GenericPlans = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan"}

// InGenericTx is InTx for the transactions every answered message runs
// (the claim, the answer's commit): their statements are not planned
// anew at each call. Postgres kept making custom plans for them (with
// the values in view a plan looks cheaper), and planning cost more CPU
// than running them: 0.45 of the 0.63 ms planned per message (issue 39,
// pg_stat_statements with track_planning). Every statement run in one
// must be one whose generic plan finds its rows by the parameters' index,
// whatever the table's size or statistics when the plan was made (a
// message's own key, a session's id, a run's id), or be preceded by
// costedPlansSQL: a read whose best plan depends on its values (a limit,
// a time range) must be planned by its costs (HistoryAndRecentTools is).
func InGenericTx(ctx context.Context, db TxBeginner, fn func(tx pgx.Tx) error) error {
	return InTxWith(ctx, db, GenericPlans, fn)
}

// costedPlansSQL gives the statements after it in its transaction (or
// batch) Postgres's own choice of plan again (plan_cache_mode auto):
// plans made for their values until a generic plan costs no more. The
// reads an InGenericTx runs whose best plan depends on their values.
const costedPlansSQL = `SELECT set_config('plan_cache_mode', 'auto', true)`

// InTxWith is InTx with the transaction's options.
func InTxWith(ctx context.Context, db TxBeginner, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	return commitAfter(ctx, tx, fn)
}

// commitAfter runs fn in tx and commits when it returns nil; otherwise it
// rolls back.
func commitAfter(ctx context.Context, tx pgx.Tx, fn func(tx pgx.Tx) error) error {
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}
