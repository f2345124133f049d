package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AccountTokens are the tokens of one model in the runs of one account's
// conversations.
type AccountTokens struct {
	Channel, Account, Model string
	Runs                    int
	Prompt, Completion      int64
}

// TokensByAccount sums the tokens of the runs started in [r.Since,
// r.Until) per account and model (of r's account, if it names one).
func TokensByAccount(ctx context.Context, q Querier, r ChartRange) ([]AccountTokens, error) {
	sql, args := narrow(`
SELECT s.channel, s.account, r.model, count(*)::int, sum(r.prompt_tokens)::bigint, sum(r.completion_tokens)::bigint
FROM runs r JOIN sessions s ON s.id = r.session_id
WHERE r.started_at >= $1 AND r.started_at < $2 /*account*/
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, r, "s.channel = $%d AND s.account = $%d", []any{r.Since, r.Until})
	return collectCosts[AccountTokens](ctx, q, "by account", sql, args)
}

// DepartmentTokens are the tokens of one model in the runs of one
// department's employees ("" for runs without a known department).
type DepartmentTokens struct {
	Department, Model  string
	Runs               int
	Prompt, Completion int64
}

// TokensByDepartment sums the tokens of the runs started in [r.Since,
// r.Until) per department of the asker and model: a run of an employee
// in two departments counts in both.
func TokensByDepartment(ctx context.Context, q Querier, r ChartRange) ([]DepartmentTokens, error) {
	sql, args := narrow(`
SELECT d.department, r.model, count(*)::int, sum(r.prompt_tokens)::bigint, sum(r.completion_tokens)::bigint
FROM runs r CROSS JOIN LATERAL unnest(CASE WHEN cardinality(r.departments) = 0 THEN ARRAY[''] ELSE r.departments END) AS d(department)
WHERE r.started_at >= $1 AND r.started_at < $2 /*account*/
GROUP BY 1, 2 ORDER BY 1, 2`, r, accountOf("r"), []any{r.Since, r.Until})
	return collectCosts[DepartmentTokens](ctx, q, "by department", sql, args)
}

func collectCosts[T any](ctx context.Context, q Querier, what, sql string, args []any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("store: tokens %s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[T])
	if err != nil {
		return nil, fmt.Errorf("store: tokens %s: %w", what, err)
	}
	return out, nil
}

// TokensByAccount is the package function over the console's pool.
func (c *Console) TokensByAccount(ctx context.Context, r ChartRange) ([]AccountTokens, error) {
	return TokensByAccount(ctx, c.pool, r)
}

// TokensByDepartment is the package function over the console's pool.
func (c *Console) TokensByDepartment(ctx context.Context, r ChartRange) ([]DepartmentTokens, error) {
	return TokensByDepartment(ctx, c.pool, r)
}
