package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrExists is returned when a row with the same key is already there.
var ErrExists = errors.New("store: already exists")

// Admin is one console account; PasswordHash is a bcrypt hash.
type Admin struct {
	Username     string
	PasswordHash []byte
	Role         string // "admin" or "viewer"
	CreatedAt    time.Time
}

// CreateAdmin stores a new console account. It returns ErrExists when the
// username is taken.
func CreateAdmin(ctx context.Context, q Querier, a Admin) error {
	_, err := q.Exec(ctx, `INSERT INTO admins (username, password_hash, role) VALUES ($1, $2, $3)`,
		a.Username, string(a.PasswordHash), a.Role)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("admin %q: %w", a.Username, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("store: create admin: %w", err)
	}
	return nil
}

// CountAdmins returns how many console accounts exist.
func CountAdmins(ctx context.Context, q Querier) (int, error) {
	var n int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM admins`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count admins: %w", err)
	}
	return n, nil
}

// GetAdmin loads a console account; ErrNotFound for an unknown username.
func GetAdmin(ctx context.Context, q Querier, username string) (Admin, error) {
	var a Admin
	var hash string
	err := q.QueryRow(ctx, `SELECT username, password_hash, role, created_at FROM admins WHERE username = $1`,
		username).Scan(&a.Username, &hash, &a.Role, &a.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fmt.Errorf("admin %q: %w", username, ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("store: get admin: %w", err)
	}
	a.PasswordHash = []byte(hash)
	return a, nil
}

// AdminSession is a live console login.
type AdminSession struct {
	Username string
	Role     string
	CSRF     string // the token every form of this session posts back
}

// InsertAdminSession stores a login under the hash of its cookie token.
func InsertAdminSession(ctx context.Context, q Querier, tokenHash []byte, username, csrf string, now, expires time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO admin_sessions (token_hash, username, csrf, created_at, expires_at) VALUES ($1,$2,$3,$4,$5)`,
		tokenHash, username, csrf, now, expires)
	if err != nil {
		return fmt.Errorf("store: insert admin session: %w", err)
	}
	return nil
}

// GetAdminSession returns the live session under tokenHash; ErrNotFound
// when there is none or it expired.
func GetAdminSession(ctx context.Context, q Querier, tokenHash []byte, now time.Time) (AdminSession, error) {
	var s AdminSession
	err := q.QueryRow(ctx, `
SELECT a.username, a.role, s.csrf FROM admin_sessions s JOIN admins a ON a.username = s.username
WHERE s.token_hash = $1 AND s.expires_at > $2`, tokenHash, now).Scan(&s.Username, &s.Role, &s.CSRF)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, fmt.Errorf("admin session: %w", ErrNotFound)
	}
	if err != nil {
		return s, fmt.Errorf("store: get admin session: %w", err)
	}
	return s, nil
}

// DeleteAdminSession ends a login, and drops every expired one with it.
func DeleteAdminSession(ctx context.Context, q Querier, tokenHash []byte, now time.Time) error {
	_, err := q.Exec(ctx, `DELETE FROM admin_sessions WHERE token_hash = $1 OR expires_at <= $2`, tokenHash, now)
	if err != nil {
		return fmt.Errorf("store: delete admin session: %w", err)
	}
	return nil
}
