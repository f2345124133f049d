package store

import (
	"context"
	"fmt"
	"strings"
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

// HeadlineFigures are the figures of [r.Since, r.Until) (of r's account,
// if it names one): two statements, both on the runs' and the messages'
// time indexes.
func HeadlineFigures(ctx context.Context, q Querier, r ChartRange) (Headline, error) {
	var h Headline
	var p95 float64
	// The messages' own account columns are named like the runs' subquery
	// would name them: both conditions are written for table aliases.
	sql, args := narrow(`
SELECT (SELECT count(*) FROM inbound_messages am WHERE received_at >= $1 AND received_at < $2 /*account*/)::int,
       count(*)::int, (count(*) FILTER (WHERE error <> '' OR stop_reason IN ('error', 'fatal_tool_error')))::int,
       coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - started_at)), 0)::float8
FROM runs WHERE started_at >= $1 AND started_at < $2 /*runs*/`, r, "am.channel = $%d AND am.account = $%d", []any{r.Since, r.Until})
	sql, args = narrowRuns(sql, r, args)
	if err := q.QueryRow(ctx, sql, args...).Scan(&h.Messages, &h.Runs, &h.Failed, &p95); err != nil {
		return Headline{}, fmt.Errorf("store: headline: %w", err)
	}
	h.P95 = time.Duration(p95 * float64(time.Second))
	sql, args = narrowRuns(`
SELECT model, sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint
FROM runs WHERE started_at >= $1 AND started_at < $2 /*runs*/ GROUP BY model ORDER BY model`, r, []any{r.Since, r.Until})
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return Headline{}, fmt.Errorf("store: headline tokens: %w", err)
	}
	h.Tokens, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ModelTokens])
	if err != nil {
		return Headline{}, fmt.Errorf("store: headline tokens: %w", err)
	}
	return h, nil
}

// narrowRuns narrows the runs of sql (its /*runs*/) to r's account.
func narrowRuns(sql string, r ChartRange, args []any) (string, []any) {
	return narrow(strings.ReplaceAll(sql, "/*runs*/", "/*account*/"), r, accountOf("runs"), args)
}

// HeadlineFigures is the package function over the console's pool.
func (c *Console) HeadlineFigures(ctx context.Context, r ChartRange) (Headline, error) {
	return HeadlineFigures(ctx, c.pool, r)
}

// ChartAccount is one account the charts can be narrowed to.
type ChartAccount struct{ Channel, Account string }

// ChartAccounts are the accounts that ever had a conversation, for the
// charts' account filter (one row per conversation: a scan of sessions).
func ChartAccounts(ctx context.Context, q Querier) ([]ChartAccount, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT channel, account FROM sessions ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("store: chart accounts: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChartAccount])
	if err != nil {
		return nil, fmt.Errorf("store: chart accounts: %w", err)
	}
	return out, nil
}

// ChartAccounts is the package function over the console's pool.
func (c *Console) ChartAccounts(ctx context.Context) ([]ChartAccount, error) {
	return ChartAccounts(ctx, c.pool)
}
