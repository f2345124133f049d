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
	defer tx.Rollback(ctx) //nolint:errcheck // no-op after commit
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}
