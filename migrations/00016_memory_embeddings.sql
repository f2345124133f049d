-- +goose Up

-- A memory's embedding by memory.embeddings (an OpenAI-compatible
-- endpoint), computed in Go when the memory is stored. NULL when
-- embeddings are off, when the endpoint failed at the time (the memory is
-- kept all the same, and still recalled by its terms), and for memories
-- stored before embeddings were turned on.
--
-- A plain array, not pgvector's vector: Hermes needs no extension. Recall
-- reads the embeddings of one owner's unexpired memories (at most
-- memory.max_per_user) by memories_owner_idx and ranks them by cosine
-- similarity in Go; no index over the vectors is needed for that. With
-- pgvector installed, an operator may add a vector column and an HNSW
-- index of their own (README, "Memory"); Hermes does not use them.
--
-- No default: adding the column rewrites nothing, and a NULL takes no
-- room in the row.
ALTER TABLE memories ADD COLUMN embedding real[];

-- +goose Down
ALTER TABLE memories DROP COLUMN embedding;
