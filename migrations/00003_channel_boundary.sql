-- +goose Up

-- Replies are no longer only text: each part has a format (text, markdown,
-- image), an image's bytes when it is one, its place in the reply, and the
-- order key of its conversation (channel/account/chat): the parts of one
-- conversation are delivered in the order they were written.
ALTER TABLE outbox
    ADD COLUMN format     text    NOT NULL DEFAULT 'text',
    ADD COLUMN media      bytea,
    ADD COLUMN media_name text    NOT NULL DEFAULT '',
    ADD COLUMN parts      integer NOT NULL DEFAULT 1,
    ADD COLUMN order_key  text    NOT NULL DEFAULT '';
CREATE INDEX outbox_order_idx ON outbox (order_key, id) WHERE delivered_at IS NULL AND failed_at IS NULL;

-- The answer so far of a run in progress, for platforms that show an
-- answer while it grows (the WeCom AI bot's stream refresh). One row per
-- message, overwritten as the run goes on.
CREATE TABLE reply_drafts (
    inbound_id bigint      PRIMARY KEY REFERENCES inbound_messages (id) ON DELETE CASCADE,
    text       text        NOT NULL,
    updated_at timestamptz NOT NULL
);

-- Leases: one holder at a time across replicas (a long connection a
-- platform allows only once per bot). A holder renews its lease; a crashed
-- one's lease expires and another replica takes over.
CREATE TABLE leases (
    name       text PRIMARY KEY,
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- /reset: history before this moment is no longer the model's context.
ALTER TABLE sessions ADD COLUMN history_from timestamptz;

-- +goose Down
ALTER TABLE sessions DROP COLUMN history_from;
DROP TABLE leases;
DROP TABLE reply_drafts;
DROP INDEX outbox_order_idx;
ALTER TABLE outbox DROP COLUMN order_key, DROP COLUMN parts, DROP COLUMN media_name,
    DROP COLUMN media, DROP COLUMN format;
