-- +goose Up

-- Lexical search no longer asks Postgres' GIN index of the passages'
-- terms: gateway/knowledge keeps them inverted in each replica's memory
-- (Postings), reloaded when the documents change, because the index
-- cost a heap read per passage holding a question's term (p95 52-60 ms
-- over 20,000 passages against 4-25 ms in memory). The terms column stays:
-- the in-memory index is loaded from it. Dropping the index saves its
-- upkeep on every document added and its space.
DROP INDEX knowledge_chunks_terms_idx;

-- +goose Down
CREATE INDEX knowledge_chunks_terms_idx ON knowledge_chunks USING gin (terms);
