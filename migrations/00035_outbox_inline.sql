-- +goose Up

-- An answer's parts that the replica which committed them sends itself,
-- at once, without a delivery job (issue 39: the job cost three written
-- rows and about two transactions per answered message). Until
-- inline_until the committing replica owns their sending; a part it has
-- neither delivered, given up nor handed to a delivery job by then (its
-- replica died) is handed to one by any replica's lease sweep. Delivery,
-- giving up and the hand-over clear it, so the index holds only the
-- parts in flight.
ALTER TABLE outbox ADD COLUMN inline_until timestamptz;
CREATE INDEX outbox_inline_idx ON outbox (inline_until) WHERE inline_until IS NOT NULL;

-- The same for the run that answers a message: the replica that accepted
-- it runs it at once, without a job, when it has a free worker. A message
-- still pending without a run holding its session's lease once its time
-- has run out (the replica died before its run began) is handed to a job
-- by the lease sweep. Answering it, and the hand-over, clear it.
ALTER TABLE inbound_messages ADD COLUMN inline_until timestamptz;
CREATE INDEX inbound_messages_inline_idx ON inbound_messages (inline_until) WHERE inline_until IS NOT NULL;

-- +goose Down
DROP INDEX inbound_messages_inline_idx;
ALTER TABLE inbound_messages DROP COLUMN inline_until;
DROP INDEX outbox_inline_idx;
ALTER TABLE outbox DROP COLUMN inline_until;
