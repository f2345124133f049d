package console

import (
	"context"
	"time"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Store is all the console does to the database: its accounts, what the
// bot did, the scheduled reports (read only; acting on them is
// Deps.RunReportNow and PauseReport), and an employee's memories through
// memoryStore. store.Console implements it over the gateway's pool. Rows
// are gateway/store's own types, which the pages show as they are.
// Errors: store.ErrNotFound for a missing row.
type Store interface {
	Accounts
	Activity
	Schedules
	Charts
	Transactions
}

// Accounts are the console's accounts, their sessions and the login
// throttle's counters.
type Accounts interface {
	GetAdmin(ctx context.Context, username string) (store.Admin, error)
	InsertAdminSession(ctx context.Context, tokenHash []byte, username, csrf string, now, expires time.Time) error
	GetAdminSession(ctx context.Context, tokenHash []byte, now time.Time) (store.AdminSession, error)
	DeleteAdminSession(ctx context.Context, tokenHash []byte, now time.Time) error
	BeginLoginAttempt(ctx context.Context, keys []store.LoginKey, now, forget time.Time,
		wait func([]store.LoginCounter) time.Duration) (time.Duration, error)
	LoginSucceeded(ctx context.Context, keys []store.LoginKey, clear store.LoginKey, now time.Time) error
	ForgetLoginCounters(ctx context.Context, failedBefore, succeededBefore time.Time) error
}

// Activity is what the bot did: per account, per conversation, per run
// and per skill.
type Activity interface {
	AccountStats(ctx context.Context, since time.Time) ([]store.AccountStat, error)
	LastRefusals(ctx context.Context) ([]store.AccountRefusal, error)
	LastRefusal(ctx context.Context, channel, account string) (store.Refusal, bool, error)
	EverReceived(ctx context.Context, channel, account string) (bool, error)
	TokenExpiries(ctx context.Context) ([]store.Expiry, error)
	Leases(ctx context.Context) ([]store.Expiry, error)
	QueueDepths(ctx context.Context) ([]store.QueueDepth, error)
	FindConversations(ctx context.Context, f store.ConversationFilter) ([]store.Conversation, error)
	GetConversation(ctx context.Context, id int64) (store.Conversation, error)
	Thread(ctx context.Context, sessionID int64, limit int) ([]store.ThreadEntry, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error)
	GetRun(ctx context.Context, id string) (store.RunRecord, error)
	GetRunOrigin(ctx context.Context, id string) (store.RunOrigin, error)
	GetRunSteps(ctx context.Context, runID string) ([]store.StepRecord, error)
	SkillStats(ctx context.Context, since time.Time) ([]store.SkillStat, error)
	LastSkillErrors(ctx context.Context, limit int) ([]store.SkillError, error)
}

// Charts are the trends of the overview and the skills page, and the
// exports of a time range (streamed: fn gets one row at a time).
type Charts interface {
	TrafficChart(ctx context.Context, r store.ChartRange) ([]store.TrafficPoint, error)
	StopChart(ctx context.Context, r store.ChartRange) ([]store.StopPoint, error)
	LatencyChart(ctx context.Context, r store.ChartRange) ([]store.LatencyPoint, error)
	GivenUpChart(ctx context.Context, r store.ChartRange) ([]store.GivenUpPoint, error)
	TokenChart(ctx context.Context, r store.ChartRange) ([]store.TokenPoint, error)
	SkillChart(ctx context.Context, r store.ChartRange) ([]store.SkillPoint, error)
	BreakerOpenings(ctx context.Context, r store.ChartRange) ([]store.BreakerOpeningPoint, error)
	HeadlineFigures(ctx context.Context, r store.ChartRange) (store.Headline, error)
	ChartAccounts(ctx context.Context) ([]store.ChartAccount, error)
	RatingChart(ctx context.Context, r store.ChartRange) ([]store.RatingPoint, error)
	RefusalChart(ctx context.Context, r store.ChartRange) ([]store.RefusalPoint, error)
	TokensByAccount(ctx context.Context, r store.ChartRange) ([]store.AccountTokens, error)
	TokensByDepartment(ctx context.Context, r store.ChartRange) ([]store.DepartmentTokens, error)
	RunRating(ctx context.Context, runID string) (int, error)
	ExportMessages(ctx context.Context, since, until time.Time, limit int, fn func(store.ExportMessage) error) error
	ExportRuns(ctx context.Context, since, until time.Time, limit int, fn func(store.ExportRun) error) error
}

// Schedules are the scheduled reports of every owner.
type Schedules interface {
	ListReports(ctx context.Context) ([]store.Report, error)
	GetReport(ctx context.Context, id int64) (store.Report, error)
	ReportHistory(ctx context.Context, id int64, limit int) ([]store.ReportRun, error)
}

// Transactions run code of packages gateway/store cannot import in one
// transaction. Only memoryStore uses it: the console's handlers never see
// a Querier, so what they do to memories is memoryStore's three methods.
type Transactions interface {
	InTx(ctx context.Context, fn func(q store.Querier) error) error
}

// Audit actions on an employee's memories, as `hermes memory` names them.
const (
	auditList   = "list"
	auditExport = "export"
	auditPurge  = "purge"
)

// memoryStore is what the console does to an employee's long-term
// memories: gateway/memory's own functions (its SQL stays in one place),
// each with its memory_audit row (who, what, whose, how many) written in
// the same transaction, as `hermes memory` does: what is shown or deleted
// was recorded, and what is recorded was done. It lives here and not in
// store.Console because gateway/memory imports gateway/store; this
// package importing gateway/memory makes no cycle (neither it nor what it
// imports imports web/console).
type memoryStore struct{ db Transactions }

// list is the owner's unexpired memories at now, numbered as /memory
// numbers them, audited as viewed by admin.
func (s memoryStore) list(ctx context.Context, admin string, o memory.Owner, now time.Time) ([]memory.Memory, error) {
	return s.read(ctx, admin, auditList, o, now, now)
}

// export is every memory of the owner still stored, expired ones not yet
// purged included, since a data request covers what is held (as `hermes
// memory export`).
func (s memoryStore) export(ctx context.Context, admin string, o memory.Owner, now time.Time) ([]memory.Exported, error) {
	var out []memory.Exported
	err := s.db.InTx(ctx, func(q store.Querier) error {
		var err error
		if out, err = memory.Export(ctx, q, o); err != nil {
			return err
		}
		return memory.Audit(ctx, q, admin, auditExport, o, len(out), now)
	})
	return out, err
}

func (s memoryStore) read(ctx context.Context, admin, action string, o memory.Owner, at, now time.Time) ([]memory.Memory, error) {
	var ms []memory.Memory
	err := s.db.InTx(ctx, func(q store.Querier) error {
		var err error
		if ms, err = memory.List(ctx, q, o, at); err != nil {
			return err
		}
		return memory.Audit(ctx, q, admin, action, o, len(ms), now)
	})
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// purge deletes every memory of the owner and returns how many.
func (s memoryStore) purge(ctx context.Context, admin string, o memory.Owner, now time.Time) (int64, error) {
	var n int64
	err := s.db.InTx(ctx, func(q store.Querier) error {
		var err error
		if n, err = memory.Forget(ctx, q, o, nil); err != nil {
			return err
		}
		return memory.Audit(ctx, q, admin, auditPurge, o, int(n), now)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// The gateway's store is the console's.
var _ Store = (*store.Console)(nil)
