-- +goose Up

-- Sends counted against the platforms' rate limits, shared by every
-- replica: one row per send and limit it counts against (a chat, an
-- account). A send is claimed only while fewer than the limit were sent in
-- the window before it (gateway/store/pacing.go); rows older than every
-- window are swept.
CREATE TABLE pace_sends (
    id      bigserial   PRIMARY KEY,
    key     text        NOT NULL,
    sent_at timestamptz NOT NULL
);
CREATE INDEX pace_sends_key_idx ON pace_sends (key, sent_at);

-- An image part's upload: the platform's media id, kept so that a resend
-- after a lost answer refers to the same media (which the platform's
-- duplicate check recognises) instead of a new upload. media_expires_at is
-- when the platform forgets the id (NULL: never); past it the part is
-- uploaded again.
ALTER TABLE outbox
    ADD COLUMN media_id          text NOT NULL DEFAULT '',
    ADD COLUMN media_uploaded_at timestamptz,
    ADD COLUMN media_expires_at  timestamptz;

-- +goose Down
ALTER TABLE outbox DROP COLUMN media_expires_at, DROP COLUMN media_uploaded_at, DROP COLUMN media_id;
DROP TABLE pace_sends;
