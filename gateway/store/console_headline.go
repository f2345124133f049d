package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Headline is a period's figures for the first line of the console's
// overview: what an operator asks first.
type Headline struct {
	Messages int // callbacks stored (messages received)
	Runs     int
	// Failed are the runs that ended in an error, as AccountStats counts
	// them.
	Failed int
	// P95 is the answer time (a run's start to its stored answer) that 95%
	// of the runs stayed under; zero without runs.
	P95 time.Duration
	// Tokens are the tokens per model, for the cost at the configured
	// prices.
	Tokens []ModelTokens
}

// ModelTokens are one model's tokens in a period.
type ModelTokens struct {
	Model              string
	Prompt, Completion int64
}

// HeadlineFigures are the figures of [since, until): two statements, both
// on the runs' and the messages' time indexes.
func HeadlineFigures(ctx context.Context, q Querier, since, until time.Time) (Headline, error) {
	var h Headline
	var p95 float64
	err := q.QueryRow(ctx, `
SELECT (SELECT count(*) FROM inbound_messages WHERE received_at >= $1 AND received_at < $2)::int,
       count(*)::int, (count(*) FILTER (WHERE error <> '' OR stop_reason IN ('error', 'fatal_tool_error')))::int,
       coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - started_at)), 0)::float8
FROM runs WHERE started_at >= $1 AND started_at < $2`, since, until).Scan(&h.Messages, &h.Runs, &h.Failed, &p95)
	if err != nil {
		return Headline{}, fmt.Errorf("store: headline: %w", err)
	}
	h.P95 = time.Duration(p95 * float64(time.Second))
	rows, err := q.Query(ctx, `
SELECT model, sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint
FROM runs WHERE started_at >= $1 AND started_at < $2 GROUP BY model ORDER BY model`, since, until)
	if err != nil {
		return Headline{}, fmt.Errorf("store: headline tokens: %w", err)
	}
	h.Tokens, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ModelTokens])
	if err != nil {
		return Headline{}, fmt.Errorf("store: headline tokens: %w", err)
	}
	return h, nil
}

// HeadlineFigures is the package function over the console's pool.
func (c *Console) HeadlineFigures(ctx context.Context, since, until time.Time) (Headline, error) {
	return HeadlineFigures(ctx, c.pool, since, until)
}
