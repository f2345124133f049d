-- +goose Up

-- The file URLs handed to skills that take files (files: true): one row
-- per attachment per skill call. The URL's token is kept only as its
-- SHA-256; the row names the attachment (inbound_media) and the call it
-- was minted for, and works until expires_at (media.file_url_ttl).
CREATE TABLE skill_files (
    token_hash bytea       PRIMARY KEY,
    inbound_id bigint      NOT NULL,
    part       int         NOT NULL,
    skill      text        NOT NULL,
    run_id     text        NOT NULL,
    user_id    text        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    fetches    int         NOT NULL DEFAULT 0,
    FOREIGN KEY (inbound_id, part) REFERENCES inbound_media (inbound_id, part) ON DELETE CASCADE
);
CREATE INDEX skill_files_expires_idx ON skill_files (expires_at);

-- +goose Down
DROP TABLE skill_files;
