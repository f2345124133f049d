-- +goose Up

-- The first part of an answer that a live reply (a stream or card showing
-- the answer as it grows) may still show: the delivery layer holds it back
-- until held_until. The row is written with the message (Accept) and
-- deleted when the live reply showed the part or ended without it, or by
-- the delivery once held_until passed. A live reply the delivery layer
-- drives renews held_until while its replica runs it, never past
-- closes_at (the platform's deadline); a replica that dies stops renewing,
-- so its answers go out a lease term later. A live reply the platform
-- polls holds until closes_at.
CREATE TABLE live_holds (
    reply_key  text        PRIMARY KEY, -- the answer's outbox reply key, 'inbound:<id>'
    held_until timestamptz NOT NULL,
    closes_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE live_holds;
