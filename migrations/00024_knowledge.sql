-- +goose Up

-- The company's own documents (gateway/knowledge): handbooks, policies,
-- how-tos an operator added, and the passages they were cut into, which
-- the agent's knowledge_search tool retrieves for the verified sender.
--
-- A document's audience is in the vocabulary of a skill's access (corps,
-- users, departments, chats; skills.Access): empty corps is everyone of
-- any corp, otherwise the caller's corp must be listed, and the users and
-- departments lists (both empty: everyone there) and the chats list
-- narrow it. Search applies it in its own WHERE clause, so a passage of a
-- document the caller may not see never leaves Postgres.
--
-- doc_key names "the same document" across versions (default its
-- title): of the versions of one key only the one in force (the latest
-- effective date, then the latest added) has current = true, and only
-- current documents are searched. The same bytes added again under the
-- same key are the same version (content_hash): a no-op.
CREATE TABLE knowledge_documents (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    doc_key      text        NOT NULL,
    title        text        NOT NULL,
    owner        text        NOT NULL DEFAULT '',
    version      text        NOT NULL DEFAULT '',
    effective    date,
    corps        text[]      NOT NULL DEFAULT '{}',
    users        text[]      NOT NULL DEFAULT '{}',
    departments  text[]      NOT NULL DEFAULT '{}',
    chats        text[]      NOT NULL DEFAULT '{}',
    source       text        NOT NULL DEFAULT '',
    kind         text        NOT NULL,
    content_hash text        NOT NULL,
    chars        int         NOT NULL,
    current      boolean     NOT NULL DEFAULT true,
    added_by     text        NOT NULL DEFAULT '',
    added_at     timestamptz NOT NULL,
    UNIQUE (doc_key, content_hash)
);
CREATE INDEX knowledge_documents_key_idx ON knowledge_documents (doc_key);

-- A passage: a run of a document under one heading path (or one table
-- row with its header), in document order (seq). terms are its lexical
-- terms with its heading's (memory.TermsUpTo: ASCII words, Han bigrams),
-- computed in Go so a passage and a question are cut the same way;
-- nterms is their count, for length normalisation. embedding is by
-- knowledge.embeddings, NULL while off or while the endpoint failed
-- (filled in later). Deleting a document deletes its passages (cascade)
-- in the same statement.
CREATE TABLE knowledge_chunks (
    id          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id bigint  NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    seq         int     NOT NULL,
    heading     text    NOT NULL DEFAULT '',
    page        int     NOT NULL DEFAULT 0,
    text        text    NOT NULL,
    terms       text[]  NOT NULL,
    nterms      int     NOT NULL,
    embedding   real[],
    UNIQUE (document_id, seq)
);
CREATE INDEX knowledge_chunks_terms_idx ON knowledge_chunks USING gin (terms);
CREATE INDEX knowledge_chunks_unembedded_idx ON knowledge_chunks (id) WHERE embedding IS NULL;

-- +goose Down
DROP TABLE knowledge_chunks;
DROP TABLE knowledge_documents;
