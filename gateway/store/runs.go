package store

import (
	"context"
	"fmt"
	"time"
)

// RunRecord is one agent run, the head of its trace.
type RunRecord struct {
	ID               string
	SessionID        int64
	InboundID        int64
	Model            string
	StopReason       string
	Error            string
	PromptTokens     int
	CompletionTokens int
	StartedAt        time.Time
	FinishedAt       time.Time
}

// StepRecord is one step of a run's trace.
type StepRecord struct {
	Step             int
	Kind             string
	Tool             string
	Args             string
	Observation      string
	Content          string
	Error            string
	PromptTokens     int
	CompletionTokens int
	Latency          time.Duration
}

// InsertRun stores a run and its steps.
func InsertRun(ctx context.Context, q Querier, r RunRecord, steps []StepRecord) error {
	_, err := q.Exec(ctx, `
INSERT INTO runs (id, session_id, inbound_id, model, stop_reason, error, prompt_tokens, completion_tokens, started_at, finished_at)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
		r.ID, r.SessionID, r.InboundID, r.Model, r.StopReason, r.Error, r.PromptTokens, r.CompletionTokens, r.StartedAt, r.FinishedAt)
	if err != nil {
		return fmt.Errorf("store: insert run: %w", err)
	}
	for i, s := range steps {
		_, err := q.Exec(ctx, `
INSERT INTO run_steps (run_id, seq, step, kind, tool, args, observation, content, error, prompt_tokens, completion_tokens, latency_ms)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`,
			r.ID, i, s.Step, s.Kind, s.Tool, s.Args, s.Observation, s.Content, s.Error, s.PromptTokens, s.CompletionTokens, s.Latency.Milliseconds())
		if err != nil {
			return fmt.Errorf("store: insert run step: %w", err)
		}
	}
	return nil
}

// GetRunSteps returns the steps of a run in order.
func GetRunSteps(ctx context.Context, q Querier, runID string) ([]StepRecord, error) {
	rows, err := q.Query(ctx, `
SELECT step, kind, tool, args, observation, content, error, prompt_tokens, completion_tokens, latency_ms
FROM run_steps WHERE run_id = $1 ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: run steps: %w", err)
	}
	defer rows.Close()
	var out []StepRecord
	for rows.Next() {
		var s StepRecord
		var ms int64
		if err := rows.Scan(&s.Step, &s.Kind, &s.Tool, &s.Args, &s.Observation, &s.Content, &s.Error, &s.PromptTokens, &s.CompletionTokens, &ms); err != nil {
			return nil, fmt.Errorf("store: run steps: %w", err)
		}
		s.Latency = time.Duration(ms) * time.Millisecond
		out = append(out, s)
	}
	return out, rows.Err()
}
