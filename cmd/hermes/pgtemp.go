package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// localPostgresURL is where `hermes demo` looks for a Postgres when
// DATABASE_URL is not set: a local server with trust authentication.
const localPostgresURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// demoDatabase is the database the demo creates on a local server.
const demoDatabase = "hermes_demo"

// demoDB finds a database for the demo: DATABASE_URL, else a local Postgres
// (creating the hermes_demo database), else a throwaway server started
// from the installed PostgreSQL binaries. cleanup stops what it started.
func demoDB(ctx context.Context, logf func(string, ...any)) (url string, cleanup func(), err error) {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		logf("database: DATABASE_URL")
		return u, func() {}, nil
	}
	if u, err := localDemoDB(ctx); err == nil {
		logf("database: local Postgres at 127.0.0.1:5432, database %s", demoDatabase)
		return u, func() {}, nil
	}
	logf("database: no local Postgres; starting a throwaway one")
	return throwawayPostgres(ctx)
}

func localDemoDB(ctx context.Context) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, localPostgresURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(cctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, demoDatabase).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(cctx, "CREATE DATABASE "+demoDatabase); err != nil {
			return "", err
		}
	}
	return "postgres://postgres@127.0.0.1:5432/" + demoDatabase + "?sslmode=disable", nil
}

// postgresBinDirs are where Debian and Ubuntu put the server binaries.
var postgresBinDirs = []string{"/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin", "/opt/homebrew/bin", "/usr/local/bin"}

func findInitdb() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return p, nil
	}
	for _, pattern := range postgresBinDirs {
		matches, _ := filepath.Glob(filepath.Join(pattern, "initdb"))
		if len(matches) > 0 {
			return matches[len(matches)-1], nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries found (initdb). Install them, e.g. `sudo apt-get install postgresql` " +
		"on Debian/Ubuntu or `brew install postgresql` on macOS, or set DATABASE_URL")
}

// throwawayPostgres initialises a cluster in a temporary folder and starts
// it on a free loopback port. PostgreSQL refuses to run as root, so as root
// it runs as the "postgres" user the Debian package creates.
func throwawayPostgres(ctx context.Context) (string, func(), error) {
	initdb, err := findInitdb()
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Dir(initdb)
	dir, err := os.MkdirTemp("", "hermes-demo-pg-")
	if err != nil {
		return "", nil, err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, errors.New("running as root and no 'postgres' user to run a throwaway server as; set DATABASE_URL")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	data := filepath.Join(dir, "data")
	run := func(ctx context.Context, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w\n%s", name, err, out)
		}
		return nil
	}
	if err := run(ctx, "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-instructions"); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, dir)
	if err := run(ctx, "pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start"); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	cleanup := func() {
		// Stop even when ctx was cancelled by Ctrl-C.
		_ = run(context.Background(), "pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
		os.RemoveAll(dir)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), cleanup, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
