package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/hermes-gw/hermes/migrations"
)

// migrateLockID is the Postgres advisory lock that serialises migrations of
// replicas starting at once ("hermes" in ASCII).
const migrateLockID int64 = 0x6865726d6573

// Migrate applies River's schema and Hermes' embedded migrations. Several
// replicas may call it at once: a session advisory lock lets one migrate
// while the others wait, then find nothing left to do.
//
// A database already at the latest schema is recognised in one query,
// before any lock or migrator: a replica's start-up (and so its readiness)
// is not delayed by work that has nothing to do.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if upToDate(ctx, pool) {
		return nil
	}
	// The lock lives on a connection of its own, outside the pool, so that
	// waiting callers do not starve the migrating one of pool connections.
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockID); err != nil {
		return fmt.Errorf("store: migrate: lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockID) //nolint:errcheck

	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return fmt.Errorf("store: migrate river: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("store: migrate river: %w", err)
	}

	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return migrateSQL(ctx, db)
}

// upToDate reports whether every River and Hermes migration is applied.
// Any error (a fresh database has neither table) says no: Migrate then
// does the full, locked work.
func upToDate(ctx context.Context, pool *pgxpool.Pool) bool {
	pending, err := MigrationsPending(ctx, pool)
	return err == nil && !pending
}

// migrateSQL applies the goose migrations over db. goose's own session
// locker guards it too, for callers that come without our lock.
func migrateSQL(ctx context.Context, db *sql.DB) error {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

// MigrationsHash identifies the schema the migrations produce; test
// harnesses use it to reuse a template database.
func MigrationsHash() (string, error) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintf(h, "river-migrations-%d\n", len(rivermigrateVersions()))
	for _, n := range names {
		b, err := fs.ReadFile(migrations.FS, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n%s\n", n, b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func rivermigrateVersions() []rivermigrate.Migration {
	m, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		return nil
	}
	return m.AllVersions()
}
