package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The console's charts: counts over a time range in equal buckets, one
// statement each, over the range indexes of migration 00018. A bucket is
// named by its start (date_bin from the range's start), so the caller
// lays them out without Postgres' time zone mattering.

// ChartRange is the period a chart covers, cut in buckets of Step, and
// the account it is narrowed to (both empty: every account).
type ChartRange struct {
	Since, Until     time.Time // [Since, Until)
	Step             time.Duration
	Channel, Account string
}

// Where a chart's rows find their account: the message's own columns, or
// for a run the message it answered (runs carry no account).
const (
	ownAccount = "channel = $%d AND account = $%d"
	runAccount = "EXISTS (SELECT 1 FROM inbound_messages am WHERE am.id = %s.inbound_id AND am.channel = $%%d AND am.account = $%%d)"
)

// accountOf is the condition of runAccount for the runs aliased alias.
func accountOf(alias string) string { return fmt.Sprintf(runAccount, alias) }

// TrafficPoint is the messages one account received in one bucket.
type TrafficPoint struct {
	At               time.Time
	Channel, Account string
	Messages         int
}

// TrafficChart counts the inbound messages per account and bucket.
func TrafficChart(ctx context.Context, q Querier, r ChartRange) ([]TrafficPoint, error) {
	return collectChart[TrafficPoint](ctx, q, "traffic", `
SELECT date_bin($3, received_at, $1), channel, account, count(*)::int
FROM inbound_messages WHERE received_at >= $1 AND received_at < $2 /*account*/
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, r, ownAccount)
}

// StopPoint is the runs that ended for one reason in one bucket.
type StopPoint struct {
	At         time.Time
	StopReason string
	Runs       int
}

// StopChart counts the runs started per bucket by stop reason.
func StopChart(ctx context.Context, q Querier, r ChartRange) ([]StopPoint, error) {
	return collectChart[StopPoint](ctx, q, "stop reasons", `
SELECT date_bin($3, started_at, $1), stop_reason, count(*)::int
FROM runs WHERE started_at >= $1 AND started_at < $2 /*account*/
GROUP BY 1, 2 ORDER BY 1, 2`, r, accountOf("runs"))
}

// LatencyPoint is how long the runs started in one bucket took, from the
// worker's start to the stored answer (queueing before it not included).
type LatencyPoint struct {
	At       time.Time
	Runs     int
	P50, P95 time.Duration
}

// LatencyChart returns the p50 and p95 run time per bucket.
func LatencyChart(ctx context.Context, q Querier, r ChartRange) ([]LatencyPoint, error) {
	return collectChart[LatencyPoint](ctx, q, "latency", `
SELECT b, n, (p[1] * 1e9)::bigint, (p[2] * 1e9)::bigint FROM (
    SELECT date_bin($3, started_at, $1) AS b, count(*)::int AS n,
           percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - started_at)) AS p
    FROM runs WHERE started_at >= $1 AND started_at < $2 /*account*/ GROUP BY 1) t
ORDER BY b`, r, accountOf("runs"))
}

// GivenUpPoint is the replies of one account given up undelivered in one
// bucket (a reply counts once however many of its parts failed).
type GivenUpPoint struct {
	At               time.Time
	Channel, Account string
	Replies          int
}

// GivenUpChart counts the replies given up per account and bucket, by the
// time their first part was given up.
func GivenUpChart(ctx context.Context, q Querier, r ChartRange) ([]GivenUpPoint, error) {
	return collectChart[GivenUpPoint](ctx, q, "given up", `
SELECT date_bin($3, f, $1), channel, account, count(*)::int FROM (
    SELECT reply_key, channel, account, min(failed_at) AS f FROM outbox
    WHERE failed_at >= $1 AND failed_at < $2 /*account*/ GROUP BY 1, 2, 3) t
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, r, ownAccount)
}

// TokenPoint is the model tokens of the runs of one model started in one
// bucket (a day on the overview).
type TokenPoint struct {
	At                             time.Time
	Model                          string
	Runs                           int
	PromptTokens, CompletionTokens int64
}

// TokenChart sums the runs' tokens per model and bucket.
func TokenChart(ctx context.Context, q Querier, r ChartRange) ([]TokenPoint, error) {
	return collectChart[TokenPoint](ctx, q, "tokens", `
SELECT date_bin($3, started_at, $1), model, count(*)::int, sum(prompt_tokens)::bigint, sum(completion_tokens)::bigint
FROM runs WHERE started_at >= $1 AND started_at < $2 /*account*/
GROUP BY 1, 2 ORDER BY 1, 2`, r, accountOf("runs"))
}

// BreakerOpenError is the text every call refused by an open circuit
// breaker carries in its step's error (skills.ErrCircuitOpen). The
// openings themselves are BreakerOpenings (breaker_events.go).
const BreakerOpenError = "circuit breaker is open"

// SkillPoint is how one skill's calls went in one bucket.
type SkillPoint struct {
	At     time.Time
	Tool   string
	Calls  int
	Errors int
	// Refused are the calls an open breaker refused (among Errors).
	Refused int
	P95     time.Duration
}

// SkillChart counts the skill calls of the runs started per bucket: calls,
// errors, calls refused by an open breaker and the p95 latency. The steps
// are looked up run by run (OFFSET 0 keeps the lateral join from being
// flattened): the planner would rather hash every step of the table,
// which at 1,000,000 runs took 227 ms for a day and 864 ms for a week
// against 143 ms and 750 ms this way.
func SkillChart(ctx context.Context, q Querier, r ChartRange) ([]SkillPoint, error) {
	return collectChart[SkillPoint](ctx, q, "skills", `
SELECT date_bin($3, r.started_at, $1), st.tool, count(*)::int, count(*) FILTER (WHERE st.error <> '')::int,
       count(*) FILTER (WHERE st.error LIKE '%' || $4 || '%')::int,
       (percentile_cont(0.95) WITHIN GROUP (ORDER BY st.latency_ms) * 1e6)::bigint
FROM runs r CROSS JOIN LATERAL (
    SELECT tool, error, latency_ms FROM run_steps WHERE run_id = r.id AND kind = 'tool' OFFSET 0) st
WHERE r.started_at >= $1 AND r.started_at < $2 /*account*/
GROUP BY 1, 2 ORDER BY 1, 2`, r, accountOf("r"), BreakerOpenError)
}

// narrow puts r's account into sql: each /*account*/ becomes "AND" and
// account, whose %d are the positions of the channel and the account
// appended to args. A statement of rows without an account (a skill's
// breaker) passes account "" and is never narrowed.
func narrow(sql string, r ChartRange, account string, args []any) (string, []any) {
	if account == "" || (r.Channel == "" && r.Account == "") {
		return sql, args
	}
	n := len(args)
	return strings.ReplaceAll(sql, "/*account*/", "AND "+fmt.Sprintf(account, n+1, n+2)), append(args, r.Channel, r.Account)
}

// collectChart runs one chart's statement with the range as $1..$3 (and
// more arguments after) and reads its rows into T by position. When r
// names an account, the statement's /*account*/ becomes "AND" and
// account (a condition whose two %d are the channel's and the account's
// argument positions, after more); otherwise it stays a comment, so
// that the plan of every account is the plan measured at 1,000,000 runs.
func collectChart[T any](ctx context.Context, q Querier, what, sql string, r ChartRange, account string, more ...any) ([]T, error) {
	if !r.Until.After(r.Since) || r.Step <= 0 {
		return nil, fmt.Errorf("store: %s chart: empty range %s–%s step %s", what, r.Since, r.Until, r.Step)
	}
	sql, args := narrow(sql, r, account, append([]any{r.Since, r.Until, r.Step}, more...))
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("store: %s chart: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[T])
	if err != nil {
		return nil, fmt.Errorf("store: %s chart: %w", what, err)
	}
	return out, nil
}
