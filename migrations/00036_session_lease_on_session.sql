-- +goose Up

-- A session's lease moves onto the session's own row (issue 39: the
-- lease's table cost an insert and a delete per answered message; the
-- session's row is written by every claim anyway, to mark it active).
--
-- The lease is held while all three hold: lease_run_id is set, it has not
-- expired, and the message it was taken for (lease_inbound_id) is still
-- pending. So the transaction that commits an answer ends the lease by
-- marking the message answered, without writing the session again; it
-- locks the session's row first (FOR NO KEY UPDATE) to fence a takeover.
-- A run that stops without answering ends it by clearing lease_run_id.
-- No foreign key on lease_inbound_id: a message that no longer exists
-- holds nothing.
ALTER TABLE sessions
    ADD COLUMN lease_inbound_id bigint,
    ADD COLUMN lease_holder     text,
    ADD COLUMN lease_run_id     text,
    ADD COLUMN lease_expires_at timestamptz;

-- Leases live at the upgrade carry over: a run of the old version commits
-- by deleting its lease row, which it no longer finds, and stops; the
-- lease lapses and the sweep hands its message on.
UPDATE sessions s
   SET lease_inbound_id = l.inbound_id, lease_holder = l.holder, lease_run_id = l.run_id, lease_expires_at = l.expires_at
  FROM session_leases l
 WHERE l.session_id = s.id;

DROP TABLE session_leases;

-- +goose Down
CREATE TABLE session_leases (
    session_id bigint      PRIMARY KEY REFERENCES sessions (id),
    inbound_id bigint      NOT NULL REFERENCES inbound_messages (id),
    holder     text        NOT NULL,
    run_id     text        NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX session_leases_expiry_idx ON session_leases (expires_at);
INSERT INTO session_leases (session_id, inbound_id, holder, run_id, expires_at)
SELECT s.id, s.lease_inbound_id, s.lease_holder, s.lease_run_id, s.lease_expires_at
  FROM sessions s JOIN inbound_messages m ON m.id = s.lease_inbound_id AND m.status = 'pending'
 WHERE s.lease_run_id IS NOT NULL;
ALTER TABLE sessions
    DROP COLUMN lease_expires_at,
    DROP COLUMN lease_run_id,
    DROP COLUMN lease_holder,
    DROP COLUMN lease_inbound_id;
