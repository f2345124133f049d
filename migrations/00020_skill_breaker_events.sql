-- +goose Up

-- Every change of a skill's circuit breaker (skills.Options.OnBreakerChange,
-- written by store.BreakerRecorder), so that the console's skills page
-- marks the openings, also those that no call ran into. States are
-- gobreaker's names: closed, open, half-open. Written a few times per
-- skill per open_for at most, read by time range (store.BreakerOpenings).
-- Runs are kept for good, so these are too.
CREATE TABLE skill_breaker_events (
    id         bigserial   PRIMARY KEY,
    skill      text        NOT NULL,
    from_state text        NOT NULL,
    to_state   text        NOT NULL,
    at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX skill_breaker_events_at_idx ON skill_breaker_events (at);

-- +goose Down
DROP TABLE skill_breaker_events;
