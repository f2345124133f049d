-- +goose Up

-- Who created a report: 'chat' (an employee, through the agent's report
-- tools) or 'admin' (`hermes reports add`). A report from chat is held to
-- reports.min_interval and reports.max_per_user, and calls a skill that
-- is not read-only only where the skill allows it (reports: allow), when
-- it is created and at every run. Existing reports made in chat are those
-- that remember the chat they were made in; the CLI never sets one. (A
-- user's reports are counted through the unique key's owner prefix.)
ALTER TABLE reports ADD COLUMN created_by text NOT NULL DEFAULT 'chat'
    CHECK (created_by IN ('chat', 'admin'));
UPDATE reports SET created_by = 'admin' WHERE owner_chat = '';
ALTER TABLE reports ALTER COLUMN created_by DROP DEFAULT;

-- Has this chat written to this account? An account that may push only
-- into a conversation where someone spoke to the bot first (the WeCom AI
-- bot) gets a report target there only then. Events (a user opening the
-- chat) are not someone speaking.
CREATE INDEX inbound_chat_idx ON inbound_messages (channel, account, chat_id, chat_type)
    WHERE msg_type <> 'event';

-- +goose Down
DROP INDEX inbound_chat_idx;
ALTER TABLE reports DROP COLUMN created_by;
