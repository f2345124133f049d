-- +goose Up

-- Interactive cards (issue #36): a confirmation (确认 / 取消) or a choice
-- the agent asked for, shown with buttons where the channel can. A button
-- carries only the card's id and its action; who may tap it, which
-- session and run it belongs to and until when live here.
--
-- state: pending (buttons live) → claimed (a tap or a typed answer took
-- it; at most once, by UPDATE … WHERE state = 'pending') → the outcome is
-- shown through an outbox part of format 'card_update'; or expired (a tap
-- after expires_at). requester_ref is the platform id a tap by the asker
-- carries (Feishu: open_id), matched against the verified clicker; the
-- requester_* columns are the asker's identity from the message that
-- asked, which a tap's run acts for.
CREATE TABLE cards (
    id               text        PRIMARY KEY,
    channel          text        NOT NULL,
    account          text        NOT NULL,
    kind             text        NOT NULL,            -- confirm | choice
    session_id       bigint      NOT NULL,
    run_id           text        NOT NULL,            -- the run whose pending the card answers
    chat_id          text        NOT NULL,
    chat_type        text        NOT NULL,
    reply_to         jsonb       NOT NULL DEFAULT '{}',
    requester        text        NOT NULL,
    requester_name   text        NOT NULL DEFAULT '',
    requester_corp   text        NOT NULL DEFAULT '',
    requester_ref    text        NOT NULL,
    title            text        NOT NULL DEFAULT '',
    body             text        NOT NULL DEFAULT '',
    options          jsonb       NOT NULL DEFAULT '[]', -- the buttons: [{"a":"ok","label":"确认"}]
    state            text        NOT NULL DEFAULT 'pending',
    action           text        NOT NULL DEFAULT '',
    message_id       text        NOT NULL DEFAULT '',   -- the platform's id of the sent card
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    claimed_at       timestamptz
);
CREATE INDEX cards_run ON cards (session_id, run_id);

-- An outbox part that is a card (format 'card') or a card's update
-- (format 'card_update') names its card.
ALTER TABLE outbox ADD COLUMN card_id text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE outbox DROP COLUMN card_id;
DROP TABLE cards;
