-- +goose Up

-- Console login throttling (web/console/throttle.go), shared by every
-- replica. One row per throttled key: scope 'account' (a username, from any
-- address), 'addr' (a client address, any username) or 'pair' (one address
-- on one username). An attempt is counted here, under the rows' locks,
-- before its password is checked, so parallel guesses are counted as they
-- come; a successful login takes its own attempt back and clears its pair.
-- last_success (pair rows only) marks an address the account has signed in
-- from: the account-wide delay does not apply to it.
CREATE TABLE login_throttle (
    scope        text        NOT NULL CHECK (scope IN ('account', 'addr', 'pair')),
    key          text        NOT NULL,
    failures     integer     NOT NULL DEFAULT 0,
    last_failure timestamptz,
    last_success timestamptz,
    PRIMARY KEY (scope, key)
);
CREATE INDEX login_throttle_idle_idx ON login_throttle (last_failure);

-- Failures counted after the password check; replaced by login_throttle.
DROP TABLE login_failures;

-- +goose Down

CREATE TABLE login_failures (
    id        bigserial   PRIMARY KEY,
    username  text        NOT NULL,
    addr      text        NOT NULL,
    failed_at timestamptz NOT NULL
);
CREATE INDEX login_failures_user_idx ON login_failures (username, failed_at);
CREATE INDEX login_failures_addr_idx ON login_failures (addr, failed_at);
DROP TABLE login_throttle;
