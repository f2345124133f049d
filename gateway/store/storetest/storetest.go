// Package storetest gives each test a fresh, fully migrated Postgres
// database on the local server (127.0.0.1:5432, user postgres, trust auth;
// override with HERMES_TEST_PG_HOST / HERMES_TEST_PG_PORT). A template
// database is migrated once per schema version and cloned per test.
package storetest

import (
	"cmp"
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver pgtestdb uses
	"github.com/peterldowns/pgtestdb"

	"github.com/hermes-gw/hermes/gateway/store"
)

// Config is the server the test databases live on.
func Config() pgtestdb.Config {
	return pgtestdb.Config{
		DriverName:                "pgx",
		Host:                      cmp.Or(os.Getenv("HERMES_TEST_PG_HOST"), "127.0.0.1"),
		Port:                      cmp.Or(os.Getenv("HERMES_TEST_PG_PORT"), "5432"),
		User:                      "postgres",
		Database:                  "postgres",
		Options:                   "sslmode=disable",
		ForceTerminateConnections: true,
	}
}

// URL returns the connection string of a fresh migrated database, dropped
// when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	return pgtestdb.Custom(t, Config(), migrator{}).URL()
}

// NewPool returns a pool on a fresh migrated database, closed when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), URL(t))
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

type migrator struct{}

func (migrator) Hash() (string, error) { return store.MigrationsHash() }

func (migrator) Migrate(ctx context.Context, _ *sql.DB, conf pgtestdb.Config) error {
	pool, err := pgxpool.New(ctx, conf.URL())
	if err != nil {
		return err
	}
	defer pool.Close()
	return store.Migrate(ctx, pool)
}
