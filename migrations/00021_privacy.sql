-- +goose Up

-- How far the retention of message content (privacy.retention) has come
-- in a table whose rows outlive their content (inbound_messages, runs:
-- the console's counts read them): the (time, key) of the last row whose
-- content was erased, so each pass starts where the last one stopped
-- instead of reading the erased rows again.
CREATE TABLE retention_marks (
    name text        PRIMARY KEY,
    at   timestamptz NOT NULL,
    key  text        NOT NULL
);

-- +goose Down
DROP TABLE retention_marks;
