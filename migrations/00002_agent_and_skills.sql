-- +goose Up

-- The agent's whole step (tokens, action, observation summary, state
-- delta) as JSON, for `hermes runs show`; and the run's final reply.
ALTER TABLE run_steps ADD COLUMN detail jsonb;
ALTER TABLE runs ADD COLUMN reply text NOT NULL DEFAULT '';

-- Observations the agent compressed out of its context. The model can
-- fetch them again by reference while the run lasts; kept for the trace.
-- (No foreign key: a run's row is written when the run ends.)
CREATE TABLE observation_archive (
    run_id     text        NOT NULL,
    ref        text        NOT NULL,
    content    text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, ref)
);

-- What a session waits for from its user: the confirmation of a skill call
-- ('confirm') or the answer to a skill's follow-up question ('followup').
-- One at a time per session; the next message of the user resolves it.
CREATE TABLE session_pending (
    session_id bigint      PRIMARY KEY REFERENCES sessions (id),
    kind       text        NOT NULL CHECK (kind IN ('confirm', 'followup')),
    payload    jsonb       NOT NULL,
    run_id     text        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

-- Async skill calls waiting for the backend to post the result. The
-- callback URL carries a token; only its SHA-256 is stored.
CREATE TABLE async_tasks (
    id           bigserial PRIMARY KEY,
    token_hash   bytea       NOT NULL UNIQUE,
    skill        text        NOT NULL,
    task_id      text        NOT NULL DEFAULT '',
    run_id       text        NOT NULL,
    inbound_id   bigint      NOT NULL REFERENCES inbound_messages (id),
    user_id      text        NOT NULL,
    status       text        NOT NULL DEFAULT 'waiting'
                 CHECK (status IN ('waiting', 'done', 'timed_out')),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    completed_at timestamptz
);
CREATE INDEX async_tasks_waiting_idx ON async_tasks (expires_at) WHERE status = 'waiting';

-- +goose Down
DROP TABLE async_tasks;
DROP TABLE session_pending;
DROP TABLE observation_archive;
ALTER TABLE runs DROP COLUMN reply;
ALTER TABLE run_steps DROP COLUMN detail;
