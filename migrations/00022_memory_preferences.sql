-- +goose Up

-- A preference is how the user wants to be answered (「以后回复我请用英文」):
-- it goes with every later message, not only those it shares words with.
ALTER TABLE memories DROP CONSTRAINT memories_kind_check;
ALTER TABLE memories ADD CONSTRAINT memories_kind_check CHECK (kind IN ('fact', 'outcome', 'preference'));

-- +goose Down
DELETE FROM memories WHERE kind = 'preference';
ALTER TABLE memories DROP CONSTRAINT memories_kind_check;
ALTER TABLE memories ADD CONSTRAINT memories_kind_check CHECK (kind IN ('fact', 'outcome'));
