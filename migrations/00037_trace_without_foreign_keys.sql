-- +goose Up

-- The history and the run trace reference their session, message and run
-- by id, without foreign keys (issue 39). Hermes writes these rows only in
-- the transaction that commits an answer, under the session's lease, from
-- ids that transaction has just read or written; and nothing deletes a
-- session, a message or a run (retention and erasure empty or delete the
-- history and trace rows themselves, never their parents). So the keys
-- caught nothing, while each answer paid nine checks for them: a lookup
-- and a row lock of the parent per key and row, about 0.18 ms of the
-- database's 1.03 ms of executor time per answered message.
ALTER TABLE messages
    DROP CONSTRAINT messages_session_id_fkey,
    DROP CONSTRAINT messages_inbound_id_fkey,
    DROP CONSTRAINT messages_run_id_fkey;
ALTER TABLE runs
    DROP CONSTRAINT runs_session_id_fkey,
    DROP CONSTRAINT runs_inbound_id_fkey;
ALTER TABLE run_steps
    DROP CONSTRAINT run_steps_run_id_fkey;

-- +goose Down
ALTER TABLE run_steps
    ADD CONSTRAINT run_steps_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE;
ALTER TABLE runs
    ADD CONSTRAINT runs_session_id_fkey FOREIGN KEY (session_id) REFERENCES sessions (id),
    ADD CONSTRAINT runs_inbound_id_fkey FOREIGN KEY (inbound_id) REFERENCES inbound_messages (id);
ALTER TABLE messages
    ADD CONSTRAINT messages_session_id_fkey FOREIGN KEY (session_id) REFERENCES sessions (id),
    ADD CONSTRAINT messages_inbound_id_fkey FOREIGN KEY (inbound_id) REFERENCES inbound_messages (id),
    ADD CONSTRAINT messages_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs (id);
