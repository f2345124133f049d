-- +goose Up

-- The model's limits when model.limits_scope is shared: every replica
-- claims its calls here (gateway/modellimit, shared.go), so all of them
-- together stay within one max_concurrent, requests_per_minute and
-- tokens_per_minute, and a 429's Retry-After holds every replica back.
-- key names the model (its name and base URL): replicas configured for
-- the same endpoint share its rows. Rows are made on first use and are
-- few (max_concurrent slots and one budget row per model), so nothing
-- sweeps them.

-- A slot is one call in flight. A call holds it until expires_at, which
-- its replica renews while the call runs; a replica that dies stops
-- renewing, and its slots come free when their leases lapse. A free slot
-- has holder NULL and expires_at epoch (1970).
--
-- No index beside the key: a claim reads at most max_concurrent rows of
-- one key, and updates that change no indexed column stay HOT (in the
-- same page, with the room fillfactor leaves), so the constant renewing
-- and releasing makes no index churn.
CREATE TABLE model_slots (
    key        text        NOT NULL,
    slot       int         NOT NULL,
    holder     bigint,
    expires_at timestamptz NOT NULL DEFAULT 'epoch',
    PRIMARY KEY (key, slot)
) WITH (fillfactor = 50);

-- The per-minute budgets as GCRA buckets: each *_tat is the theoretical
-- arrival time of the budget, the moment the bucket would be full again
-- if nothing else were claimed (epoch: full). A claim of n moves it n
-- intervals on and is refused when it would move it further than the
-- bucket's depth past now. paused_until is when calls may start again
-- after a 429.
CREATE TABLE model_budgets (
    key          text PRIMARY KEY,
    requests_tat timestamptz NOT NULL DEFAULT 'epoch',
    tokens_tat   timestamptz NOT NULL DEFAULT 'epoch',
    paused_until timestamptz NOT NULL DEFAULT 'epoch'
) WITH (fillfactor = 50);

-- +goose Down
DROP TABLE model_budgets;
DROP TABLE model_slots;
