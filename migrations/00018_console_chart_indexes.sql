-- +goose Up

-- The console's charts and exports read a time range of each table
-- (gateway/store/console_charts.go, console_export.go); without these
-- every chart scans its whole table. Each index carries the columns its
-- charts group by, so the charts over runs and messages are index-only
-- scans (runs and inbound_messages are written once and vacuumed, so the
-- visibility map stays set). BenchmarkConsoleCharts1M measures them at
-- 1,000,000 runs.
-- id: the skills chart joins run_steps on it.
CREATE INDEX runs_started_idx ON runs (started_at)
    INCLUDE (id, stop_reason, model, finished_at, prompt_tokens, completion_tokens);
CREATE INDEX inbound_received_idx ON inbound_messages (received_at) INCLUDE (channel, account);
-- Given-up parts are few; the partial index holds only them.
CREATE INDEX outbox_failed_idx ON outbox (failed_at) WHERE failed_at IS NOT NULL;
-- The conversation export reads the messages of a range.
CREATE INDEX messages_created_idx ON messages (created_at);

-- +goose Down
DROP INDEX messages_created_idx;
DROP INDEX outbox_failed_idx;
DROP INDEX inbound_received_idx;
DROP INDEX runs_started_idx;
