-- +goose Up

-- A run's last step, when it is the model's (the answer, or the question
-- it asks), is kept on the run's row as JSON instead of as a row of
-- run_steps (issue 39: the run and its trace in one write; a plain answer
-- has no other step). Its keys are run_steps' columns. run_steps keeps
-- every tool step and the model's steps before the last, so what the
-- console and the alerts count over tool steps is unchanged; the view
-- run_trace is the whole trace.
ALTER TABLE runs ADD COLUMN final_step jsonb;

-- The whole trace, the final step last (seq: the largest int): what the
-- console, the export and anyone reading a run's steps by hand read.
CREATE VIEW run_trace AS
SELECT run_id, seq, step, kind, tool, args, observation, content, error, prompt_tokens, completion_tokens, latency_ms, detail
  FROM run_steps
UNION ALL
SELECT r.id, 2147483647, f.step, f.kind, f.tool, f.args, f.observation, f.content, f.error,
       f.prompt_tokens, f.completion_tokens, f.latency_ms, f.detail
  FROM runs r, jsonb_to_record(r.final_step) AS f(step int, kind text, tool text, args text, observation text,
       content text, error text, prompt_tokens int, completion_tokens int, latency_ms int, detail jsonb)
 WHERE r.final_step IS NOT NULL;

-- +goose Down
DROP VIEW run_trace;
INSERT INTO run_steps (run_id, seq, step, kind, tool, args, observation, content, error,
                       prompt_tokens, completion_tokens, latency_ms, detail)
SELECT r.id, (SELECT count(*) FROM run_steps s WHERE s.run_id = r.id), f.step, f.kind, f.tool, f.args, f.observation,
       f.content, f.error, f.prompt_tokens, f.completion_tokens, f.latency_ms, f.detail
  FROM runs r, jsonb_to_record(r.final_step) AS f(step int, kind text, tool text, args text, observation text,
       content text, error text, prompt_tokens int, completion_tokens int, latency_ms int, detail jsonb)
 WHERE r.final_step IS NOT NULL;
ALTER TABLE runs DROP COLUMN final_step;
