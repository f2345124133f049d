-- +goose Up

-- An employee's rating of an answer: 👍 (1) or 👎 (-1), one per run (a
-- second rating replaces the first). The channel and account are the
-- run's, kept here so that the console's charts narrow by account without
-- a join; no text and no user: who rated is the run's session.
CREATE TABLE run_ratings (
    run_id   text        PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    rating   smallint    NOT NULL CHECK (rating IN (-1, 1)),
    channel  text        NOT NULL,
    account  text        NOT NULL,
    rated_at timestamptz NOT NULL
);
CREATE INDEX run_ratings_rated_idx ON run_ratings (rated_at);

-- The rating looks up the newest run of a conversation.
CREATE INDEX runs_session_started_idx ON runs (session_id, started_at DESC);

-- +goose Down
DROP INDEX runs_session_started_idx;
DROP TABLE run_ratings;
