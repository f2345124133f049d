-- +goose Up

-- Operators of the console. The first comes from `hermes admin create` or
-- the HERMES_ADMIN_BOOTSTRAP_USER/_PASSWORD environment; the password is
-- kept only as a bcrypt hash.
CREATE TABLE admins (
    username      text PRIMARY KEY,
    password_hash text        NOT NULL,
    role          text        NOT NULL CHECK (role IN ('admin', 'viewer')),
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- Console sessions: the cookie holds a random token, this table its
-- SHA-256, so a database dump gives no working session. csrf is the
-- per-session token every form posts back.
CREATE TABLE admin_sessions (
    token_hash bytea       PRIMARY KEY,
    username   text        NOT NULL REFERENCES admins (username) ON DELETE CASCADE,
    csrf       text        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX admin_sessions_expiry_idx ON admin_sessions (expires_at);

-- Failed logins, counted per username and per client address over a
-- window, shared by all replicas.
CREATE TABLE login_failures (
    id        bigserial   PRIMARY KEY,
    username  text        NOT NULL,
    addr      text        NOT NULL,
    failed_at timestamptz NOT NULL
);
CREATE INDEX login_failures_user_idx ON login_failures (username, failed_at);
CREATE INDEX login_failures_addr_idx ON login_failures (addr, failed_at);

-- +goose Down

DROP TABLE login_failures;
DROP TABLE admin_sessions;
DROP TABLE admins;
