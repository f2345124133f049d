-- +goose Up

-- Every message a platform delivered to us. The unique key is the dedupe
-- key: a platform retry of the same message inserts nothing.
CREATE TABLE inbound_messages (
    id              bigserial PRIMARY KEY,
    channel         text        NOT NULL,
    account         text        NOT NULL,
    platform_msg_id text        NOT NULL,
    msg_type        text        NOT NULL,
    chat_id         text        NOT NULL,
    chat_type       text        NOT NULL,
    sender_id       text        NOT NULL,
    sender_name     text        NOT NULL DEFAULT '',
    sender_corp     text        NOT NULL DEFAULT '',
    text            text        NOT NULL DEFAULT '',
    mentioned       boolean     NOT NULL DEFAULT false,
    reply_to        jsonb       NOT NULL DEFAULT '{}',
    raw             jsonb,
    -- pending: waiting for the worker; done: answered (the reply is in the
    -- outbox); ignored: recorded only (events); failed: gave up, user told.
    status          text        NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'done', 'ignored', 'failed')),
    received_at     timestamptz NOT NULL DEFAULT now(),
    processed_at    timestamptz,
    UNIQUE (channel, account, platform_msg_id)
);

-- A session is one user in one chat of one app: channel + account + chat + user.
CREATE TABLE sessions (
    id             bigserial PRIMARY KEY,
    channel        text        NOT NULL,
    account        text        NOT NULL,
    chat_id        text        NOT NULL,
    user_id        text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    last_active_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (channel, account, chat_id, user_id)
);

-- The agent's run trace: one row per run, one per step.
CREATE TABLE runs (
    id                text PRIMARY KEY,
    session_id        bigint      NOT NULL REFERENCES sessions (id),
    inbound_id        bigint      NOT NULL UNIQUE REFERENCES inbound_messages (id),
    model             text        NOT NULL,
    stop_reason       text        NOT NULL,
    error             text        NOT NULL DEFAULT '',
    prompt_tokens     integer     NOT NULL DEFAULT 0,
    completion_tokens integer     NOT NULL DEFAULT 0,
    started_at        timestamptz NOT NULL,
    finished_at       timestamptz NOT NULL
);

CREATE TABLE run_steps (
    run_id            text    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq               integer NOT NULL,
    step              integer NOT NULL,
    kind              text    NOT NULL,
    tool              text    NOT NULL DEFAULT '',
    args              text    NOT NULL DEFAULT '',
    observation       text    NOT NULL DEFAULT '',
    content           text    NOT NULL DEFAULT '',
    error             text    NOT NULL DEFAULT '',
    prompt_tokens     integer NOT NULL DEFAULT 0,
    completion_tokens integer NOT NULL DEFAULT 0,
    latency_ms        integer NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, seq)
);

-- Conversation history, text only, what the model sees as earlier turns.
CREATE TABLE messages (
    id         bigserial PRIMARY KEY,
    session_id bigint      NOT NULL REFERENCES sessions (id),
    inbound_id bigint      REFERENCES inbound_messages (id),
    run_id     text        REFERENCES runs (id),
    role       text        NOT NULL CHECK (role IN ('user', 'assistant')),
    content    text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_session_idx ON messages (session_id, id DESC);

-- Replies waiting for delivery. (reply_key, part) is the idempotency key:
-- writing the same reply twice is a no-op, so a re-run cannot duplicate it.
CREATE TABLE outbox (
    id               bigserial PRIMARY KEY,
    reply_key        text        NOT NULL,
    part             integer     NOT NULL,
    channel          text        NOT NULL,
    account          text        NOT NULL,
    reply_to         jsonb       NOT NULL,
    text             text        NOT NULL,
    attempts         integer     NOT NULL DEFAULT 0,
    first_attempt_at timestamptz,
    last_error       text        NOT NULL DEFAULT '',
    platform_msg_id  text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    failed_at        timestamptz,
    UNIQUE (reply_key, part)
);

-- Platform access tokens shared by replicas. Values are sealed (AES-GCM with
-- a key derived from the app secret), so the database never holds a usable
-- credential in the clear.
CREATE TABLE token_cache (
    key        text PRIMARY KEY,
    value      bytea       NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE token_cache;
DROP TABLE outbox;
DROP TABLE messages;
DROP TABLE run_steps;
DROP TABLE runs;
DROP TABLE sessions;
DROP TABLE inbound_messages;
