-- +goose Up

-- Scheduled reports: what to run, as whom, when, and where to send it.
CREATE TABLE reports (
    id            bigserial PRIMARY KEY,
    name          text        NOT NULL,
    -- The owner, who created it: skills run with this identity and only
    -- the owner manages the report. The chat is where it was created
    -- (skill access rules may name chats).
    owner_channel text        NOT NULL,
    owner_account text        NOT NULL,
    owner_corp    text        NOT NULL,
    owner_user    text        NOT NULL,
    owner_name    text        NOT NULL DEFAULT '',
    owner_chat    text        NOT NULL DEFAULT '',
    owner_depts   text[]      NOT NULL DEFAULT '{}',
    -- A robfig/cron expression (5 fields, or 6 with seconds) read in tz.
    cron          text        NOT NULL,
    tz            text        NOT NULL,
    -- What a tick missed while every replica was down does at start.
    catch_up      text        NOT NULL CHECK (catch_up IN ('run_once', 'skip')),
    -- The report's content: a skill call formatted by a template, or a
    -- prompt the agent answers; chart and targets as JSON.
    spec          jsonb       NOT NULL,
    targets       jsonb       NOT NULL,
    paused        boolean     NOT NULL DEFAULT false,
    -- The last fire time the scheduler has dealt with (run or skipped);
    -- the next tick is computed after it.
    last_fire_at  timestamptz NOT NULL,
    created_at    timestamptz NOT NULL,
    UNIQUE (owner_channel, owner_corp, owner_user, name)
);

-- One run of a report. A scheduled run claims (report, fire time): the
-- unique key makes a tick fire once across replicas. Run-now has no fire
-- time.
CREATE TABLE report_runs (
    id          bigserial PRIMARY KEY,
    report_id   bigint      NOT NULL REFERENCES reports (id) ON DELETE CASCADE,
    fire_at     timestamptz,
    trigger     text        NOT NULL CHECK (trigger IN ('schedule', 'catch_up', 'manual')),
    status      text        NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed')),
    created_at  timestamptz NOT NULL,
    started_at  timestamptz,
    finished_at timestamptz,
    error       text        NOT NULL DEFAULT '',
    UNIQUE (report_id, fire_at)
);
CREATE INDEX report_runs_report_idx ON report_runs (report_id, id DESC);

-- One target of one run. The message itself is in the outbox under
-- reply_key (and reply_key || ':chart' for the picture); its delivery
-- status is the outbox's. error is set when no message could be queued
-- (a chat the bot cannot reach).
CREATE TABLE report_deliveries (
    run_id     bigint  NOT NULL REFERENCES report_runs (id) ON DELETE CASCADE,
    target     integer NOT NULL,
    channel    text    NOT NULL,
    account    text    NOT NULL,
    chat_id    text    NOT NULL,
    reply_key  text    NOT NULL,
    error      text    NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, target)
);

-- +goose Down
DROP TABLE report_deliveries;
DROP TABLE report_runs;
DROP TABLE reports;
