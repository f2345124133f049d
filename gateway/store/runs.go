package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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
	Reply            string
	StartedAt        time.Time
	FinishedAt       time.Time
	// Departments are the asker's department ids, for the cost by
	// department (none where the channel has no directory).
	Departments []string
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
	Detail           []byte // the agent's step as JSON
}

// finalStepKind is the kind of step (agent.StepModel) that, last in a
// run, is kept on the run's row (runs.final_step, migration 00038).
const finalStepKind = "model"

// finalStepJSON is a step as runs.final_step holds it: run_steps' columns.
type finalStepJSON struct {
	Step             int             `json:"step"`
	Kind             string          `json:"kind"`
	Tool             string          `json:"tool"`
	Args             string          `json:"args"`
	Observation      string          `json:"observation"`
	Content          string          `json:"content"`
	Error            string          `json:"error"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
	LatencyMS        int64           `json:"latency_ms"`
	Detail           json.RawMessage `json:"detail,omitempty"`
}

// InsertRun stores a run and its steps: the last step on the run's row
// when it is the model's, the others in run_steps (one statement for
// all). A plain answer is one row.
func InsertRun(ctx context.Context, q Querier, r RunRecord, steps []StepRecord) error {
	var final any // NULL: no final model step
	if n := len(steps); n > 0 && steps[n-1].Kind == finalStepKind {
		s := steps[n-1]
		b, err := json.Marshal(finalStepJSON{Step: s.Step, Kind: s.Kind, Tool: s.Tool, Args: s.Args, Observation: s.Observation,
			Content: s.Content, Error: s.Error, PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens,
			LatencyMS: s.Latency.Milliseconds(), Detail: json.RawMessage(s.Detail)})
		if err != nil {
			return fmt.Errorf("store: insert run: %w", err)
		}
		final, steps = string(b), steps[:n-1]
	}
	_, err := q.Exec(ctx, `
INSERT INTO runs (id, session_id, inbound_id, model, stop_reason, error, prompt_tokens, completion_tokens, reply, started_at, finished_at,
                  departments, final_step)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13::jsonb)`,
		r.ID, r.SessionID, r.InboundID, r.Model, r.StopReason, r.Error, r.PromptTokens, r.CompletionTokens, r.Reply, r.StartedAt, r.FinishedAt,
		nonNil(r.Departments), final)
	if err != nil {
		return fmt.Errorf("store: insert run: %w", err)
	}
	if len(steps) == 0 {
		return nil
	}
	// One statement for the other steps: a run's trace costs one round trip.
	const cols = 13
	var sql strings.Builder
	sql.WriteString(`INSERT INTO run_steps (run_id, seq, step, kind, tool, args, observation, content, error,
    prompt_tokens, completion_tokens, latency_ms, detail) VALUES `)
	args := make([]any, 0, cols*len(steps))
	for i, s := range steps {
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteString("(")
		for c := range cols {
			if c > 0 {
				sql.WriteString(",")
			}
			fmt.Fprintf(&sql, "$%d", i*cols+c+1)
		}
		sql.WriteString(")")
		args = append(args, r.ID, i, s.Step, s.Kind, s.Tool, s.Args, s.Observation, s.Content, s.Error,
			s.PromptTokens, s.CompletionTokens, s.Latency.Milliseconds(), jsonOrNil(s.Detail))
	}
	if _, err := q.Exec(ctx, sql.String(), args...); err != nil {
		return fmt.Errorf("store: insert run steps: %w", err)
	}
	return nil
}

// RunStepsSQL selects the whole trace of the runs whose ids are in the
// array $1 from the view run_trace (run_steps and each run's final step,
// migration 00038), as rows of run_steps' columns.
const RunStepsSQL = `
SELECT run_id, seq, step, kind, tool, args, observation, content, error, prompt_tokens, completion_tokens, latency_ms, detail
  FROM run_trace WHERE run_id = ANY($1)`

func jsonOrNil(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// GetRun loads a run. It returns ErrNotFound for an unknown id.
func GetRun(ctx context.Context, q Querier, id string) (RunRecord, error) {
	var r RunRecord
	err := q.QueryRow(ctx, `
SELECT id, session_id, inbound_id, model, stop_reason, error, prompt_tokens, completion_tokens, reply, started_at, finished_at
FROM runs WHERE id = $1`, id).Scan(&r.ID, &r.SessionID, &r.InboundID, &r.Model, &r.StopReason, &r.Error,
		&r.PromptTokens, &r.CompletionTokens, &r.Reply, &r.StartedAt, &r.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("store: get run: %w", err)
	}
	return r, nil
}

// GetRunSteps returns the steps of a run in order, its final step too.
func GetRunSteps(ctx context.Context, q Querier, runID string) ([]StepRecord, error) {
	rows, err := q.Query(ctx, `
SELECT step, kind, tool, args, observation, content, error, prompt_tokens, completion_tokens, latency_ms, detail::text
FROM (`+RunStepsSQL+`) t ORDER BY seq`, []string{runID})
	if err != nil {
		return nil, fmt.Errorf("store: run steps: %w", err)
	}
	defer rows.Close()
	var out []StepRecord
	for rows.Next() {
		var s StepRecord
		var ms int64
		var detail *string
		if err := rows.Scan(&s.Step, &s.Kind, &s.Tool, &s.Args, &s.Observation, &s.Content, &s.Error, &s.PromptTokens, &s.CompletionTokens, &ms, &detail); err != nil {
			return nil, fmt.Errorf("store: run steps: %w", err)
		}
		s.Latency = time.Duration(ms) * time.Millisecond
		if detail != nil {
			s.Detail = []byte(*detail)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// RunFilter selects runs for ListRuns; an empty field matches every run.
type RunFilter struct {
	UserID     string    // the sender the run answered
	ChatID     string    // the conversation
	StopReason string    // e.g. "timeout", "fatal_tool_error"
	Channel    string    // the platform of the conversation
	Account    string    // the account (app or bot) of the conversation
	Since      time.Time // started at or after
	Until      time.Time // started before
	Limit      int       // newest first, default 50
}

// RunSummary is one line of ListRuns: the run and the message it answered.
type RunSummary struct {
	ID, StopReason, Channel, Account, UserID, ChatID, MessageID, Text string
	StartedAt, FinishedAt                                             time.Time
}

// ListRuns returns the runs matching f, newest first.
func ListRuns(ctx context.Context, q Querier, f RunFilter) ([]RunSummary, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	rows, err := q.Query(ctx, `
SELECT r.id, r.stop_reason, s.channel, s.account, s.user_id, s.chat_id, i.platform_msg_id, i.text, r.started_at, r.finished_at
FROM runs r JOIN sessions s ON s.id = r.session_id JOIN inbound_messages i ON i.id = r.inbound_id
WHERE ($1 = '' OR s.user_id = $1) AND ($2 = '' OR s.chat_id = $2) AND ($3 = '' OR r.stop_reason = $3)
  AND ($4::timestamptz IS NULL OR r.started_at >= $4) AND ($5::timestamptz IS NULL OR r.started_at < $5)
  AND ($7 = '' OR s.channel = $7) AND ($8 = '' OR s.account = $8)
ORDER BY r.started_at DESC, r.id LIMIT $6`,
		f.UserID, f.ChatID, f.StopReason, timeOrNil(f.Since), timeOrNil(f.Until), f.Limit, f.Channel, f.Account)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RunSummary, error) {
		var r RunSummary
		err := row.Scan(&r.ID, &r.StopReason, &r.Channel, &r.Account, &r.UserID, &r.ChatID, &r.MessageID, &r.Text,
			&r.StartedAt, &r.FinishedAt)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	return out, nil
}

// nonNil is list, or an empty list for nil: a NOT NULL array column.
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// RunIDsByMessage returns the runs that answered the platform message
// msgID (one per channel and account that used that id), oldest first.
func RunIDsByMessage(ctx context.Context, q Querier, msgID string) ([]string, error) {
	rows, err := q.Query(ctx, `
SELECT r.id FROM runs r JOIN inbound_messages i ON i.id = r.inbound_id
WHERE i.platform_msg_id = $1 ORDER BY r.started_at`, msgID)
	if err != nil {
		return nil, fmt.Errorf("store: runs by message: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: runs by message: %w", err)
	}
	return ids, nil
}
