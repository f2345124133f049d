package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/migrations"
)

// MigrationsPending reports whether an embedded migration (River's or
// Hermes') is not yet applied to the database (a replica of a newer build
// started before `hermes migrate` ran). It takes no lock and changes
// nothing: one query, cheap enough for every /readyz.
func MigrationsPending(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return false, fmt.Errorf("store: migrations: %w", err)
	}
	var river, hermes int
	err = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM river_migration WHERE line = 'main'),
    (SELECT count(DISTINCT version_id) FROM goose_db_version WHERE is_applied AND version_id > 0)`).Scan(&river, &hermes)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return true, nil // undefined_table: a database never migrated
	}
	if err != nil {
		return false, fmt.Errorf("store: migrations: %w", err)
	}
	return river < len(rivermigrateVersions()) || hermes < len(names), nil
}
