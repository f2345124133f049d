-- +goose Up

-- Who answers a session now. A run claims its session's lease in a short
-- transaction and renews it while it lives; the transaction that commits
-- the answer deletes it. A crashed replica stops renewing, the lease
-- lapses, and a sweeper on any replica enqueues the message again. No
-- connection is held while the model thinks.
CREATE TABLE session_leases (
    session_id bigint      PRIMARY KEY REFERENCES sessions (id),
    -- The message being answered under the lease.
    inbound_id bigint      NOT NULL REFERENCES inbound_messages (id),
    -- The replica that holds it (renews it) and the run (fences the commit).
    holder     text        NOT NULL,
    run_id     text        NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX session_leases_expiry_idx ON session_leases (expires_at);

-- A session's messages still to answer, oldest first: what a run checks
-- before it answers (order) and hands its session to when it ends.
CREATE INDEX inbound_pending_session_idx ON inbound_messages (channel, account, chat_id, sender_id, id)
    WHERE status = 'pending';

-- +goose Down
DROP INDEX inbound_pending_session_idx;
DROP TABLE session_leases;
