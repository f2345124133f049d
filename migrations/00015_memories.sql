-- +goose Up

-- An employee's long-term memories: short notes Hermes keeps across
-- sessions for one user of one corp (gateway/memory). A fact is something
-- the user stated ("我在上海办公室", "叫我小王"); an outcome is the result of
-- a write the user confirmed ("2026-12-01 提交了 VPN 申请 VPN-1001"). Rows
-- are only ever read with their owner (corp_id, user_id) from the verified
-- identity, so one employee's notes never reach another's prompt.
--
-- terms are the text's lexical terms (memory.Terms: ASCII words and Han
-- bigrams), computed in Go so that what is stored and what a query looks
-- for are cut the same way; recall matches them with && (the GIN index,
-- per owner: below) and ranks by how many are shared. used_at is when a
-- memory was last recalled (NULL: never), for the operators and a future
-- eviction policy; every recall updates it, so pages keep room
-- (fillfactor 90) for those updates to stay HOT and not touch the
-- indexes. Past expires_at a memory is neither listed nor recalled, and a
-- periodic job deletes it (retention). The same text again for the same
-- owner refreshes the row instead of adding one (the unique key).
CREATE TABLE memories (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    corp_id    text        NOT NULL,
    user_id    text        NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('fact', 'outcome')),
    text       text        NOT NULL,
    terms      text[]      NOT NULL,
    source     text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    used_at    timestamptz,
    expires_at timestamptz NOT NULL,
    UNIQUE (corp_id, user_id, text)
) WITH (fillfactor = 90);
-- An owner's list (/memory, the admin CLI), oldest first.
CREATE INDEX memories_owner_idx ON memories (corp_id, user_id, created_at);
-- Recall: the owner's memories sharing a term with the query. The index
-- holds the owner's terms (memory_owner_terms), not the bare terms: a
-- bare term such as 申请 or 上海 is in a good part of every company's
-- notes, and its posting list (157,000 rows of a million in the
-- benchmark) cost Recall 21 ms to read before the owner filter threw
-- almost all of it away; an owner's term lists only that owner's rows.
-- The key is an access path only: Recall still filters corp_id and
-- user_id exactly, so ids that would make the same key (a separator in
-- an id) cannot mix owners' memories.
-- +goose StatementBegin
CREATE FUNCTION memory_owner_terms(corp_id text, user_id text, terms text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT ARRAY(SELECT corp_id || E'\x1f' || user_id || E'\x1f' || t FROM unnest(terms) AS t) $$;
-- +goose StatementEnd
CREATE INDEX memories_terms_idx ON memories USING gin (memory_owner_terms(corp_id, user_id, terms));
-- The retention purge.
CREATE INDEX memories_expires_idx ON memories (expires_at);

-- What operators did with an employee's memories (hermes memory list,
-- purge, export): who, when, whose and how many, kept for the answer to a
-- personal-information request (PIPL) and to a question about who looked.
-- action is 'list', 'purge' or 'export'.
CREATE TABLE memory_audit (
    id      bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      timestamptz NOT NULL,
    admin   text        NOT NULL,
    action  text        NOT NULL,
    corp_id text        NOT NULL,
    user_id text        NOT NULL,
    count   int         NOT NULL
);
CREATE INDEX memory_audit_owner_idx ON memory_audit (corp_id, user_id, at);

-- +goose Down
DROP TABLE memory_audit;
DROP TABLE memories;
DROP FUNCTION memory_owner_terms;
