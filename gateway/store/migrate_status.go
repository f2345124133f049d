package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/hermes-gw/hermes/migrations"
)

// MigrationsPending reports whether an embedded migration is not yet
// applied to the database (a replica of a newer build started before
// `hermes migrate` ran). It takes no lock and changes nothing.
func MigrationsPending(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		return false, fmt.Errorf("store: migrations: %w", err)
	}
	pending, err := provider.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("store: migrations: %w", err)
	}
	return pending, nil
}
