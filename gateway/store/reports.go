package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrReportExists: the owner already has a report of that name.
var ErrReportExists = errors.New("store: a report of that name exists")

// Report trigger kinds (report_runs.trigger).
const (
	TriggerSchedule = "schedule" // a tick on time
	TriggerCatchUp  = "catch_up" // a tick missed while every replica was down
	TriggerManual   = "manual"   // run now (chat or CLI)
)

// Report run statuses.
const (
	RunQueued  = "queued"
	RunRunning = "running"
	RunDone    = "done"
	RunFailed  = "failed"
)

// Who created a report (reports.created_by).
const (
	CreatedByChat  = "chat"  // an employee, through the agent's report tools
	CreatedByAdmin = "admin" // an operator (`hermes reports add`)
)

// ReportOwner is who created a report: skills run as this identity.
type ReportOwner struct {
	Channel, Account, Corp, User, Name, Chat string
	Depts                                    []string
}

// ReportTarget is one chat a report goes to, with the channel's address
// of it (its ReplyTo JSON).
type ReportTarget struct {
	Channel  string          `json:"channel"`
	Account  string          `json:"account"`
	ChatType string          `json:"chat_type"`
	ChatID   string          `json:"chat_id"`
	ReplyTo  json.RawMessage `json:"reply_to"`
}

// Report is one stored report.
type Report struct {
	ID         int64
	Name       string
	Owner      ReportOwner
	Cron, TZ   string
	CatchUp    string
	Spec       json.RawMessage // the gateway's description of the content
	Targets    []ReportTarget
	Paused     bool
	LastFireAt time.Time
	CreatedAt  time.Time
	// CreatedBy is CreatedByChat or CreatedByAdmin: a report from chat is
	// held to the limits of reports made by employees.
	CreatedBy string
}

const reportColumns = `id, name, owner_channel, owner_account, owner_corp, owner_user, owner_name, owner_chat, owner_depts,
       cron, tz, catch_up, spec, targets, paused, last_fire_at, created_at, created_by`

func scanReport(row pgx.CollectableRow) (Report, error) {
	var r Report
	var targets []byte
	err := row.Scan(&r.ID, &r.Name, &r.Owner.Channel, &r.Owner.Account, &r.Owner.Corp, &r.Owner.User, &r.Owner.Name,
		&r.Owner.Chat, &r.Owner.Depts, &r.Cron, &r.TZ, &r.CatchUp, &r.Spec, &targets, &r.Paused, &r.LastFireAt, &r.CreatedAt, &r.CreatedBy)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(targets, &r.Targets)
}

// InsertReport stores a new report; its first tick is the first after
// r.LastFireAt (its creation). Errors: ErrReportExists.
func InsertReport(ctx context.Context, q Querier, r Report) (int64, error) {
	targets, err := json.Marshal(r.Targets)
	if err != nil {
		return 0, fmt.Errorf("store: report targets: %w", err)
	}
	depts := r.Owner.Depts
	if depts == nil {
		depts = []string{}
	}
	var id int64
	err = q.QueryRow(ctx, `
INSERT INTO reports (name, owner_channel, owner_account, owner_corp, owner_user, owner_name, owner_chat, owner_depts,
                     cron, tz, catch_up, spec, targets, paused, last_fire_at, created_at, created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) RETURNING id`,
		r.Name, r.Owner.Channel, r.Owner.Account, r.Owner.Corp, r.Owner.User, r.Owner.Name, r.Owner.Chat, depts,
		r.Cron, r.TZ, r.CatchUp, []byte(r.Spec), targets, r.Paused, r.LastFireAt, r.CreatedAt, r.CreatedBy).Scan(&id)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return 0, fmt.Errorf("%w: %q", ErrReportExists, r.Name)
	}
	if err != nil {
		return 0, fmt.Errorf("store: insert report: %w", err)
	}
	return id, nil
}

// LockReportOwner holds, until tx ends, the right to create reports for
// owner: counting the owner's reports and inserting one is then atomic
// across replicas (two confirmations at once cannot both pass the count).
func LockReportOwner(ctx context.Context, tx pgx.Tx, owner ReportOwner) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`,
		lockID("report owner\x00"+owner.Channel+"\x00"+owner.Corp+"\x00"+owner.User)); err != nil {
		return fmt.Errorf("store: lock report owner: %w", err)
	}
	return nil
}

// CountReports is how many reports owner has that createdBy made.
func CountReports(ctx context.Context, q Querier, owner ReportOwner, createdBy string) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM reports WHERE `+ownerFilter+` AND created_by = $4`,
		append(ownerArgs(&owner), createdBy)...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count reports: %w", err)
	}
	return n, nil
}

// ChatHasWritten reports whether a message (not an event) from chatID
// has arrived on account of channel: an account that may push only into
// conversations that wrote to it first can reach that chat.
func ChatHasWritten(ctx context.Context, q Querier, channel, account, chatType, chatID string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM inbound_messages
WHERE channel = $1 AND account = $2 AND chat_id = $3 AND chat_type = $4 AND msg_type <> 'event')`,
		channel, account, chatID, chatType).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("store: has chat %s written: %w", chatID, err)
	}
	return ok, nil
}

// LockConversations holds, until tx ends, the right to write to the
// outbox of each conversation (order key): what tx writes there is then
// contiguous in the conversation's order, the parts of a report (its text
// and chart) included, however many runs write to the same chat at once.
// The locks are taken in one order, so two holders never deadlock.
func LockConversations(ctx context.Context, tx pgx.Tx, orderKeys []string) error {
	ids := make([]int64, 0, len(orderKeys))
	for _, k := range orderKeys {
		ids = append(ids, lockID("outbox order\x00"+k))
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if _, err := tx.Exec(ctx, `SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT k FROM unnest($1::bigint[]) AS k ORDER BY k) s`, ids); err != nil {
		return fmt.Errorf("store: lock conversations: %w", err)
	}
	return nil
}

// ownerFilter matches every report when owner is nil (the operator), else
// the owner's own.
const ownerFilter = `($1::text IS NULL OR (owner_channel = $1 AND owner_corp = $2 AND owner_user = $3))`

func ownerArgs(owner *ReportOwner) []any {
	if owner == nil {
		return []any{nil, nil, nil}
	}
	return []any{owner.Channel, owner.Corp, owner.User}
}

// ListReports returns owner's reports (all with a nil owner), by id.
func ListReports(ctx context.Context, q Querier, owner *ReportOwner) ([]Report, error) {
	rows, err := q.Query(ctx, `SELECT `+reportColumns+` FROM reports WHERE `+ownerFilter+` ORDER BY id`, ownerArgs(owner)...)
	if err != nil {
		return nil, fmt.Errorf("store: list reports: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanReport)
	if err != nil {
		return nil, fmt.Errorf("store: list reports: %w", err)
	}
	return out, nil
}

// GetReport returns report id if owner may see it (nil: anyone).
// Errors: ErrNotFound.
func GetReport(ctx context.Context, q Querier, id int64, owner *ReportOwner) (Report, error) {
	rows, err := q.Query(ctx, `SELECT `+reportColumns+` FROM reports WHERE `+ownerFilter+` AND id = $4`,
		append(ownerArgs(owner), id)...)
	if err != nil {
		return Report{}, fmt.Errorf("store: report %d: %w", id, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanReport)
	if errors.Is(err, pgx.ErrNoRows) {
		return Report{}, fmt.Errorf("%w: report %d", ErrNotFound, id)
	}
	if err != nil {
		return Report{}, fmt.Errorf("store: report %d: %w", id, err)
	}
	return r, nil
}

// SetReportPaused pauses or resumes report id of owner (nil: any).
// Resuming starts from now: ticks missed while paused are not caught up.
// Errors: ErrNotFound.
func SetReportPaused(ctx context.Context, q Querier, id int64, owner *ReportOwner, paused bool, now time.Time) error {
	tag, err := q.Exec(ctx, `UPDATE reports SET paused = $5,
    last_fire_at = CASE WHEN paused AND NOT $5 THEN GREATEST(last_fire_at, $6) ELSE last_fire_at END
WHERE `+ownerFilter+` AND id = $4`, append(ownerArgs(owner), id, paused, now)...)
	return oneRow(tag, err, id)
}

// DeleteReport deletes report id of owner (nil: any) with its history.
// Errors: ErrNotFound.
func DeleteReport(ctx context.Context, q Querier, id int64, owner *ReportOwner) error {
	tag, err := q.Exec(ctx, `DELETE FROM reports WHERE `+ownerFilter+` AND id = $4`, append(ownerArgs(owner), id)...)
	return oneRow(tag, err, id)
}

func oneRow(tag pgconn.CommandTag, err error, id int64) error {
	if err != nil {
		return fmt.Errorf("store: report %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: report %d", ErrNotFound, id)
	}
	return nil
}

// ActiveReports are the reports not paused: what the scheduler looks at.
func ActiveReports(ctx context.Context, q Querier) ([]Report, error) {
	rows, err := q.Query(ctx, `SELECT `+reportColumns+` FROM reports WHERE NOT paused ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: active reports: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanReport)
	if err != nil {
		return nil, fmt.Errorf("store: active reports: %w", err)
	}
	return out, nil
}

// ClaimReportRun records a run of report id for fireAt (nil: run now).
// For a fire time only the first claim across replicas succeeds (claimed
// false for the others); the report's last fire time moves to fireAt.
func ClaimReportRun(ctx context.Context, tx pgx.Tx, id int64, fireAt *time.Time, trigger string, now time.Time) (runID int64, claimed bool, err error) {
	err = tx.QueryRow(ctx, `
INSERT INTO report_runs (report_id, fire_at, trigger, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (report_id, fire_at) DO NOTHING RETURNING id`, id, fireAt, trigger, now).Scan(&runID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: claim report %d: %w", id, err)
	}
	if fireAt != nil {
		if err := AdvanceReport(ctx, tx, id, *fireAt); err != nil {
			return 0, false, err
		}
	}
	return runID, true, nil
}

// AdvanceReport moves report id's last fire time to at (never back): a
// tick skipped, or claimed.
func AdvanceReport(ctx context.Context, q Querier, id int64, at time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE reports SET last_fire_at = GREATEST(last_fire_at, $2) WHERE id = $1`, id, at); err != nil {
		return fmt.Errorf("store: advance report %d: %w", id, err)
	}
	return nil
}

// ReportRun is one run of a report.
type ReportRun struct {
	ID, ReportID int64
	FireAt       *time.Time
	Trigger      string
	Status       string
	CreatedAt    time.Time
	StartedAt    *time.Time
	FinishedAt   *time.Time
	Error        string
	Deliveries   []ReportDelivery
}

// Delivery statuses, from the outbox.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// ReportDelivery is one target of one run.
type ReportDelivery struct {
	RunID    int64
	Target   int
	Channel  string
	Account  string
	ChatID   string
	ReplyKey string
	Status   string // DeliveryPending, DeliveryDelivered or DeliveryFailed
	Error    string
	At       *time.Time // delivered or given up
}

const runColumns = `id, report_id, fire_at, trigger, status, created_at, started_at, finished_at, error`

func scanRun(row pgx.CollectableRow) (ReportRun, error) {
	var r ReportRun
	err := row.Scan(&r.ID, &r.ReportID, &r.FireAt, &r.Trigger, &r.Status, &r.CreatedAt, &r.StartedAt, &r.FinishedAt, &r.Error)
	return r, err
}

// GetReportRun returns run id. Errors: ErrNotFound.
func GetReportRun(ctx context.Context, q Querier, id int64) (ReportRun, error) {
	rows, err := q.Query(ctx, `SELECT `+runColumns+` FROM report_runs WHERE id = $1`, id)
	if err != nil {
		return ReportRun{}, fmt.Errorf("store: report run %d: %w", id, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("%w: report run %d", ErrNotFound, id)
	}
	if err != nil {
		return r, fmt.Errorf("store: report run %d: %w", id, err)
	}
	return r, nil
}

// StartReportRun marks run id running (again, on a retry).
func StartReportRun(ctx context.Context, q Querier, id int64, now time.Time) error {
	_, err := q.Exec(ctx, `UPDATE report_runs SET status = 'running', started_at = COALESCE(started_at, $2) WHERE id = $1`, id, now)
	if err != nil {
		return fmt.Errorf("store: start report run %d: %w", id, err)
	}
	return nil
}

// FinishReportRun records how run id ended: RunDone or RunFailed with why.
func FinishReportRun(ctx context.Context, q Querier, id int64, status, errText string, now time.Time) error {
	_, err := q.Exec(ctx, `UPDATE report_runs SET status = $2, error = $3, finished_at = $4 WHERE id = $1`, id, status, errText, now)
	if err != nil {
		return fmt.Errorf("store: finish report run %d: %w", id, err)
	}
	return nil
}

// InsertReportDelivery records one target of a run (once; a retried run
// keeps the first record).
func InsertReportDelivery(ctx context.Context, q Querier, d ReportDelivery) error {
	_, err := q.Exec(ctx, `
INSERT INTO report_deliveries (run_id, target, channel, account, chat_id, reply_key, error)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id, target) DO NOTHING`,
		d.RunID, d.Target, d.Channel, d.Account, d.ChatID, d.ReplyKey, d.Error)
	if err != nil {
		return fmt.Errorf("store: report delivery: %w", err)
	}
	return nil
}

// ReportHistory returns report id's latest runs, newest first, each with
// its deliveries and their status as the outbox has it.
func ReportHistory(ctx context.Context, q Querier, id int64, limit int) ([]ReportRun, error) {
	rows, err := q.Query(ctx, `SELECT `+runColumns+` FROM report_runs WHERE report_id = $1 ORDER BY id DESC LIMIT $2`, id, limit)
	if err != nil {
		return nil, fmt.Errorf("store: report history: %w", err)
	}
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return nil, fmt.Errorf("store: report history: %w", err)
	}
	for i := range runs {
		if runs[i].Deliveries, err = RunDeliveries(ctx, q, runs[i].ID); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// RunDeliveries returns the deliveries of run id by target. A target is
// delivered when every part under its reply keys is, failed when one was
// given up (or nothing could be queued), pending otherwise.
func RunDeliveries(ctx context.Context, q Querier, runID int64) ([]ReportDelivery, error) {
	rows, err := q.Query(ctx, `
SELECT d.run_id, d.target, d.channel, d.account, d.chat_id, d.reply_key,
       CASE WHEN d.error <> '' OR bool_or(o.failed_at IS NOT NULL) THEN 'failed'
            WHEN count(o.id) > 0 AND bool_and(o.delivered_at IS NOT NULL) THEN 'delivered'
            ELSE 'pending' END,
       COALESCE(NULLIF(d.error, ''), string_agg(NULLIF(o.last_error, ''), '; '), ''),
       GREATEST(max(o.delivered_at), max(o.failed_at))
FROM report_deliveries d
LEFT JOIN outbox o ON o.reply_key = d.reply_key OR o.reply_key = d.reply_key || ':chart'
WHERE d.run_id = $1
GROUP BY d.run_id, d.target, d.channel, d.account, d.chat_id, d.reply_key, d.error
ORDER BY d.target`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: report deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReportDelivery, error) {
		var d ReportDelivery
		err := row.Scan(&d.RunID, &d.Target, &d.Channel, &d.Account, &d.ChatID, &d.ReplyKey, &d.Status, &d.Error, &d.At)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: report deliveries: %w", err)
	}
	return out, nil
}
