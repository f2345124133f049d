package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Console is the store as the operator's console sees it (web/console's
// Store): the queries of its pages, its accounts and its login throttle,
// over the pool, with reports of any owner. The console is given this,
// never the pool, so what it may do to the database is this list.
type Console struct{ pool *pgxpool.Pool }

// NewConsole is the console's store over pool.
func NewConsole(pool *pgxpool.Pool) *Console { return &Console{pool: pool} }

// InTx runs fn in one transaction over the pool, committing when fn
// returns nil. It is the one door the console has to more than the list
// below: its memory page calls gateway/memory's functions, which this
// package cannot (gateway/memory imports it), and must write their
// memory_audit row in the same transaction as the read or the delete it
// records. fn gets a Querier, not the transaction, so it cannot commit
// half of it.
func (c *Console) InTx(ctx context.Context, fn func(q Querier) error) error {
	return InTx(ctx, c.pool, func(tx pgx.Tx) error { return fn(tx) })
}

// Accounts and sessions (admins.go, logins.go).

func (c *Console) GetAdmin(ctx context.Context, username string) (Admin, error) {
	return GetAdmin(ctx, c.pool, username)
}

func (c *Console) InsertAdminSession(ctx context.Context, tokenHash []byte, username, csrf string, now, expires time.Time) error {
	return InsertAdminSession(ctx, c.pool, tokenHash, username, csrf, now, expires)
}

func (c *Console) GetAdminSession(ctx context.Context, tokenHash []byte, now time.Time) (AdminSession, error) {
	return GetAdminSession(ctx, c.pool, tokenHash, now)
}

func (c *Console) DeleteAdminSession(ctx context.Context, tokenHash []byte, now time.Time) error {
	return DeleteAdminSession(ctx, c.pool, tokenHash, now)
}

func (c *Console) BeginLoginAttempt(ctx context.Context, keys []LoginKey, now, forget time.Time,
	wait func([]LoginCounter) time.Duration) (time.Duration, error) {
	return BeginLoginAttempt(ctx, c.pool, keys, now, forget, wait)
}

func (c *Console) LoginSucceeded(ctx context.Context, keys []LoginKey, clear LoginKey, now time.Time) error {
	return LoginSucceeded(ctx, c.pool, keys, clear, now)
}

func (c *Console) ForgetLoginCounters(ctx context.Context, failedBefore, succeededBefore time.Time) error {
	return ForgetLoginCounters(ctx, c.pool, failedBefore, succeededBefore)
}

// What the bot did (console.go, refusals.go, runs.go).

func (c *Console) AccountStats(ctx context.Context, since time.Time) ([]AccountStat, error) {
	return AccountStats(ctx, c.pool, since)
}

func (c *Console) LastRefusals(ctx context.Context) ([]AccountRefusal, error) {
	return LastRefusals(ctx, c.pool)
}

func (c *Console) LastRefusal(ctx context.Context, channel, account string) (Refusal, bool, error) {
	return LastRefusal(ctx, c.pool, channel, account)
}

func (c *Console) EverReceived(ctx context.Context, channel, account string) (bool, error) {
	return EverReceived(ctx, c.pool, channel, account)
}

func (c *Console) TokenExpiries(ctx context.Context) ([]Expiry, error) {
	return TokenExpiries(ctx, c.pool)
}

func (c *Console) Leases(ctx context.Context) ([]Expiry, error) { return Leases(ctx, c.pool) }

func (c *Console) QueueDepths(ctx context.Context) ([]QueueDepth, error) {
	return QueueDepths(ctx, c.pool)
}

func (c *Console) FindConversations(ctx context.Context, f ConversationFilter) ([]Conversation, error) {
	return FindConversations(ctx, c.pool, f)
}

func (c *Console) GetConversation(ctx context.Context, id int64) (Conversation, error) {
	return GetConversation(ctx, c.pool, id)
}

func (c *Console) Thread(ctx context.Context, sessionID int64, limit int) ([]ThreadEntry, error) {
	return Thread(ctx, c.pool, sessionID, limit)
}

func (c *Console) ListRuns(ctx context.Context, f RunFilter) ([]RunSummary, error) {
	return ListRuns(ctx, c.pool, f)
}

func (c *Console) GetRun(ctx context.Context, id string) (RunRecord, error) {
	return GetRun(ctx, c.pool, id)
}

func (c *Console) GetRunOrigin(ctx context.Context, id string) (RunOrigin, error) {
	return GetRunOrigin(ctx, c.pool, id)
}

func (c *Console) GetRunSteps(ctx context.Context, runID string) ([]StepRecord, error) {
	return GetRunSteps(ctx, c.pool, runID)
}

func (c *Console) SkillStats(ctx context.Context, since time.Time) ([]SkillStat, error) {
	return SkillStats(ctx, c.pool, since)
}

func (c *Console) LastSkillErrors(ctx context.Context, limit int) ([]SkillError, error) {
	return LastSkillErrors(ctx, c.pool, limit)
}

// Scheduled reports of every owner, read only (reports.go).

func (c *Console) ListReports(ctx context.Context) ([]Report, error) {
	return ListReports(ctx, c.pool, nil)
}

func (c *Console) GetReport(ctx context.Context, id int64) (Report, error) {
	return GetReport(ctx, c.pool, id, nil)
}

func (c *Console) ReportHistory(ctx context.Context, id int64, limit int) ([]ReportRun, error) {
	return ReportHistory(ctx, c.pool, id, limit)
}

// Charts and exports (console_charts.go, breaker_events.go, console_export.go).

func (c *Console) TrafficChart(ctx context.Context, r ChartRange) ([]TrafficPoint, error) {
	return TrafficChart(ctx, c.pool, r)
}

func (c *Console) StopChart(ctx context.Context, r ChartRange) ([]StopPoint, error) {
	return StopChart(ctx, c.pool, r)
}

func (c *Console) LatencyChart(ctx context.Context, r ChartRange) ([]LatencyPoint, error) {
	return LatencyChart(ctx, c.pool, r)
}

func (c *Console) GivenUpChart(ctx context.Context, r ChartRange) ([]GivenUpPoint, error) {
	return GivenUpChart(ctx, c.pool, r)
}

func (c *Console) TokenChart(ctx context.Context, r ChartRange) ([]TokenPoint, error) {
	return TokenChart(ctx, c.pool, r)
}

// skillChartWorkMem is the sort memory of the skills chart: its p95 per
// skill and hour sorts every call of the period, which at 4MB (Postgres'
// default) spills to disk for a week of 1,000,000 runs; local to its
// transaction.
const skillChartWorkMem = "32MB"

func (c *Console) SkillChart(ctx context.Context, r ChartRange) ([]SkillPoint, error) {
	var out []SkillPoint
	err := InTx(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL work_mem = '"+skillChartWorkMem+"'"); err != nil {
			return fmt.Errorf("store: skills chart: %w", err)
		}
		var err error
		out, err = SkillChart(ctx, tx, r)
		return err
	})
	return out, err
}

func (c *Console) BreakerOpenings(ctx context.Context, r ChartRange) ([]BreakerOpeningPoint, error) {
	return BreakerOpenings(ctx, c.pool, r)
}

func (c *Console) ExportMessages(ctx context.Context, since, until time.Time, limit int, fn func(ExportMessage) error) error {
	return ExportMessages(ctx, c.pool, since, until, limit, fn)
}

func (c *Console) ExportRuns(ctx context.Context, since, until time.Time, limit int, fn func(ExportRun) error) error {
	return ExportRuns(ctx, c.pool, since, until, limit, fn)
}
