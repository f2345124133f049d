package storetest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/store"
)

// templateLock serialises template creation across test processes (go
// test runs packages at once): a session advisory lock on the server's
// postgres database.
const templateLock = 0x6865726d6573 // "hermes"

// prefix names every database this package makes, so that leftovers of a
// failed test are easy to find (and drop).
const prefix = "hermes_test_"

// adminConns bound the process's connections to the postgres database.
const adminConns = 4

// serverURL is the URL of database db on the test server.
func serverURL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"),
		Host: cmp.Or(os.Getenv("HERMES_TEST_PG_HOST"), "127.0.0.1") + ":" + cmp.Or(os.Getenv("HERMES_TEST_PG_PORT"), "5432"),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// server is what every test of the process shares: a few connections to
// the postgres database and the template's name. Connections are kept,
// not opened per test: opening one costs a PostgreSQL backend's start-up
// (about 45 ms of CPU on this machine), and a package's tests create and
// drop a hundred databases.
var server struct {
	once     sync.Once
	admin    *pgxpool.Pool
	template string
	err      error
	drops    chan string    // databases of passed tests, to drop
	pending  sync.WaitGroup // drops queued and not done
}

// droppers drop databases at once: in PostgreSQL 15 each DROP DATABASE
// forces a checkpoint, and drops waiting together share one.
const droppers = adminConns - 1

// dropAll drops the databases of passed tests behind the tests rather than
// in their cleanup: a DROP DATABASE took 1.3 s (median) with the tests
// running, which a test waiting for it would hold its -parallel slot. Main
// waits for the last ones; those of a process that ended otherwise are
// dropped by the next one (sweep).
func dropAll(ctx context.Context) {
	for name := range server.drops {
		_ = admin(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
		server.pending.Done()
	}
}

// drop queues the drop of name.
func drop(name string) {
	server.pending.Add(1)
	server.drops <- name
}

// Main runs the tests of a package that uses this one, then waits until
// the databases of its passed tests are dropped; call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	server.pending.Wait()
	return code
}

// URL returns the connection string of a fresh migrated database, a copy
// of the template, dropped after the test passed (kept for a look when it
// failed, until the next run).
func URL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	server.once.Do(func() {
		server.admin, server.template, server.err = connect(ctx)
		if server.err == nil {
			server.drops = make(chan string, 1<<16)
			sweep(ctx)
			for range droppers {
				go dropAll(ctx)
			}
		}
	})
	if server.err != nil {
		t.Fatalf("storetest: %v", server.err)
	}
	name, err := database(ctx)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("storetest: kept database %s of the failed test", name)
			return
		}
		drop(name)
	})
	return serverURL(name) + "&" + sessionOptions
}

// sessionOptions are the test databases' session settings. A commit does
// not wait for its WAL to reach the disk (synchronous_commit=off): the
// tests crash Hermes, never PostgreSQL, so nothing they check depends on
// it, and the waits were a quarter of the statements' time.
const sessionOptions = "options=-c%20synchronous_commit%3Doff"

// database returns a new copy of the template.
func database(ctx context.Context) (string, error) {
	name := newName()
	err := admin(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, server.template))
	return name, err
}

// sweep queues the drop of the databases left by test processes that have
// ended: those they had no time to drop, and those of failed tests, kept
// for a look until the next run. The process id in a name tells whose it
// is; a remote server's (HERMES_TEST_PG_HOST) are left alone, as their
// processes cannot be seen from here.
func sweep(ctx context.Context) {
	if host := os.Getenv("HERMES_TEST_PG_HOST"); host != "" && host != "127.0.0.1" && host != "localhost" {
		return
	}
	rows, err := server.admin.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE $1`, prefix+"%")
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		pid, _, ok := strings.Cut(strings.TrimPrefix(name, prefix), "_")
		if n, err := strconv.Atoi(pid); !ok || err != nil || syscall.Kill(n, 0) == syscall.ESRCH {
			drop(name)
		}
	}
}

// newName is a new database name of this process.
func newName() string { return fmt.Sprintf("%s%d_%s", prefix, os.Getpid(), randomID()) }

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

// connect opens the admin pool and returns it with the template of the
// current migrations, which it creates and migrates first if no process
// has.
func connect(ctx context.Context) (*pgxpool.Pool, string, error) {
	cfg, err := pgxpool.ParseConfig(serverURL("postgres"))
	if err != nil {
		return nil, "", err
	}
	cfg.MaxConns = adminConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	name, err := ensureTemplate(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, "", fmt.Errorf("template: %w", err)
	}
	return pool, name, nil
}

// ensureTemplate returns the template database of the current migrations
// (their hash names it), creating and migrating it first if needed.
func ensureTemplate(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	hash, err := store.MigrationsHash()
	if err != nil {
		return "", err
	}
	name := "hermes_tpl_" + hash[:16]
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, templateLock); err != nil {
		return "", err
	}
	defer conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, templateLock) //nolint:errcheck // released with the session otherwise
	var ready bool
	err = conn.QueryRow(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, name).Scan(&ready)
	switch {
	case err == nil && ready:
		return name, nil
	case err == nil: // a process died while migrating it
		if _, err := conn.Exec(ctx, `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			return "", err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return "", err
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		return "", err
	}
	tpl, err := pgxpool.New(ctx, serverURL(name))
	if err != nil {
		return "", err
	}
	err = store.Migrate(ctx, tpl)
	tpl.Close()
	if err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	if _, err := conn.Exec(ctx, `UPDATE pg_database SET datistemplate = true WHERE datname = $1`, name); err != nil {
		return "", err
	}
	return name, nil
}

// admin runs one statement on the server's postgres database.
func admin(ctx context.Context, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := server.admin.Exec(ctx, sql)
	return err
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// OpenWork counts the work a gateway has not finished: jobs not done,
// messages a replica runs without a job and answer parts it sends without
// one (their inline_until is set until they are answered, sent or handed
// to a job; see gateway/inline.go). Zero: whatever was acknowledged has
// been answered and delivered.
const OpenWork = `SELECT (SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'discarded', 'cancelled'))
     + (SELECT count(*) FROM inbound_messages WHERE inline_until IS NOT NULL)
     + (SELECT count(*) FROM outbox WHERE inline_until IS NOT NULL)`

// WaitForLockWait returns once a statement of pool's database whose text
// contains like waits on a lock (pg_stat_activity): the way a test knows
// that a concurrent statement has reached the lock it is testing, without
// sleeping. It polls every 5 ms and fails t when ctx ends first.
func WaitForLockWait(t testing.TB, ctx context.Context, pool *pgxpool.Pool, like string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		var waiting bool
		if err := pool.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND position($1 in query) > 0`, like).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("no statement like %q waited on a lock: %v", like, ctx.Err())
		}
	}
}
