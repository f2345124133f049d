-- +goose Up

-- The departments of the employee a run answered, as the channel's
-- directory gave them for the run (ids; empty where the channel has no
-- directory or the lookup failed): the console's cost by department.
-- A constant default adds the column without rewriting the table.
ALTER TABLE runs ADD COLUMN departments text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE runs DROP COLUMN departments;
