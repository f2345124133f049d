-- +goose Up

-- Callbacks a platform package refused, counted per account and check
-- ("signature", "timestamp", "decrypt", "token", "malformed"), so the
-- console can say which check failed. Never the body, a header or a
-- secret: only which check and when.
CREATE TABLE callback_refusals (
    channel text        NOT NULL,
    account text        NOT NULL,
    "check" text        NOT NULL,
    count   bigint      NOT NULL,
    last_at timestamptz NOT NULL,
    PRIMARY KEY (channel, account, "check")
);

-- +goose Down

DROP TABLE callback_refusals;
