-- +goose Up

-- A message's attachments and quote as its channel named them
-- (channels.Part, channels.Quote): fetched later, by the worker.
ALTER TABLE inbound_messages
    ADD COLUMN parts jsonb,
    ADD COLUMN quote jsonb;

-- An attachment's bytes once fetched (decrypted), or why they could not
-- be: one row per media part of a message. Only the sender's own runs read
-- them; the console shows name, type, size and what they became, never
-- the bytes. Purged after media.retention by a periodic job.
CREATE TABLE inbound_media (
    inbound_id bigint      NOT NULL REFERENCES inbound_messages (id) ON DELETE CASCADE,
    part       int         NOT NULL,
    kind       text        NOT NULL,
    name       text        NOT NULL DEFAULT '',
    mime       text        NOT NULL DEFAULT '',
    size       bigint      NOT NULL DEFAULT 0,
    data       bytea,
    error      text        NOT NULL DEFAULT '',
    became     text        NOT NULL DEFAULT '',
    fetched_at timestamptz NOT NULL,
    PRIMARY KEY (inbound_id, part)
);
CREATE INDEX inbound_media_fetched_idx ON inbound_media (fetched_at);

-- +goose Down
DROP TABLE inbound_media;
ALTER TABLE inbound_messages DROP COLUMN quote, DROP COLUMN parts;
