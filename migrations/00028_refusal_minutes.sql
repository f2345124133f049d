-- +goose Up

-- Refused callbacks per account, check and minute, beside the running
-- totals of callback_refusals: what the console charts over a period and
-- the refused_callbacks alert counts over its window. A flood of forged
-- callbacks is one row per account, check and minute; rows older than 35
-- days are forgotten by the inbox's callback housekeeping.
CREATE TABLE callback_refusal_minutes (
    channel text        NOT NULL,
    account text        NOT NULL,
    "check" text        NOT NULL,
    minute  timestamptz NOT NULL,
    count   integer     NOT NULL,
    PRIMARY KEY (channel, account, "check", minute)
);
CREATE INDEX callback_refusal_minutes_idx ON callback_refusal_minutes (minute);

-- +goose Down
DROP TABLE callback_refusal_minutes;
