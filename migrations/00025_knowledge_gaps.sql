-- +goose Up

-- The knowledge base's gaps (gateway/knowledge): the questions its
-- documents did not answer, and how often each document was cited.
--
-- A gap is a message whose run searched the documents and whose answer
-- cited no passage: found is how many passages the search gave (0: none
-- matched). question is the employee's own text, verbatim (bounded), so
-- that forgetting a memory (store.ScrubText) finds a copy in it, privacy
-- erase deletes it with the person's messages (by inbound_id), and
-- retention deletes it at privacy.retention. The console groups
-- questions by a normalised form at read time.
CREATE TABLE knowledge_gaps (
    inbound_id bigint      PRIMARY KEY REFERENCES inbound_messages (id) ON DELETE CASCADE,
    corp_id    text        NOT NULL,
    question   text        NOT NULL,
    found      int         NOT NULL,
    asked_at   timestamptz NOT NULL
);
CREATE INDEX knowledge_gaps_asked_idx ON knowledge_gaps (asked_at);

-- cited counts the answers that cited a document (a version), so the
-- console can list those never cited; it holds no one's text.
ALTER TABLE knowledge_documents ADD COLUMN cited bigint NOT NULL DEFAULT 0,
    ADD COLUMN last_cited_at timestamptz;

-- +goose Down
ALTER TABLE knowledge_documents DROP COLUMN cited, DROP COLUMN last_cited_at;
DROP TABLE knowledge_gaps;
