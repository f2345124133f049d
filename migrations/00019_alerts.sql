-- +goose Up

-- An alert rule fires at most once per window across replicas: the
-- firing claims (rule, window start) in the transaction that queues its
-- message (gateway/alerts). Rows older than a few days are pruned by the
-- same check.
CREATE TABLE alert_firings (
    rule         text             NOT NULL,
    window_start timestamptz      NOT NULL,
    value        double precision NOT NULL,
    fired_at     timestamptz      NOT NULL,
    PRIMARY KEY (rule, window_start)
);

-- +goose Down
DROP TABLE alert_firings;
