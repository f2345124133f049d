package console

import (
	"context"
	"time"

	"github.com/hermes-gw/hermes/gateway/store"
)

// Store is all the console does to the database: its accounts, what the
// bot did, and the scheduled reports (read only; acting on them is
// Deps.RunReportNow and PauseReport). store.Console implements it over
// the gateway's pool. Rows are gateway/store's own types, which the pages
// show as they are. Errors: store.ErrNotFound for a missing row.
type Store interface {
	Accounts
	Activity
	Schedules
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

// Schedules are the scheduled reports of every owner.
type Schedules interface {
	ListReports(ctx context.Context) ([]store.Report, error)
	GetReport(ctx context.Context, id int64) (store.Report, error)
	ReportHistory(ctx context.Context, id int64, limit int) ([]store.ReportRun, error)
}

// The gateway's store is the console's.
var _ Store = (*store.Console)(nil)
