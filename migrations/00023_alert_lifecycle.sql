-- +goose Up

-- One row per alert rule: whether it is firing (an incident open since
-- firing_since) and until when it is silenced. A check takes the row's
-- lock, so two replicas never both open or close one incident.
CREATE TABLE alert_state (
    rule           text PRIMARY KEY,
    firing_since   timestamptz,
    silenced_until timestamptz,
    silenced_by    text NOT NULL DEFAULT ''
);

-- An incident's end, and whether it fired while silenced (not posted).
ALTER TABLE alert_firings ADD COLUMN resolved_at timestamptz;
ALTER TABLE alert_firings ADD COLUMN silenced boolean NOT NULL DEFAULT false;

-- Who silenced which rule until when: the audit of silences.
CREATE TABLE alert_silences (
    id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule   text        NOT NULL,
    until  timestamptz NOT NULL,
    by     text        NOT NULL,
    at     timestamptz NOT NULL,
    reason text        NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE alert_silences;
ALTER TABLE alert_firings DROP COLUMN silenced;
ALTER TABLE alert_firings DROP COLUMN resolved_at;
DROP TABLE alert_state;
