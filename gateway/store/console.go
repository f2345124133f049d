package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The console's read queries: short, one statement each, over the
// pipeline's own tables.

// AccountStat is the traffic of one channel account since a moment.
type AccountStat struct {
	Channel, Account string
	Messages         int       // inbound messages received
	Runs             int       // agent runs started
	Failures         int       // runs that ended in an error, messages given up and Undelivered
	Undelivered      int       // replies (answers, reports, async results) given up undelivered
	Pending          int       // reply parts not yet delivered (at any age)
	LastReceived     time.Time // the newest verified callback or frame; zero: none
	LastError        string    // the newest delivery or run error
	LastErrorAt      time.Time
}

// AccountStats returns the traffic since since of every account that has
// received a message, or that has a reply given up undelivered since (an
// account used for reports only). A reply counts as undelivered once when
// any of its parts was given up.
func AccountStats(ctx context.Context, q Querier, since time.Time) ([]AccountStat, error) {
	rows, err := q.Query(ctx, `
WITH undelivered AS (SELECT channel, account, count(DISTINCT reply_key) AS replies FROM outbox
                     WHERE failed_at >= $1 GROUP BY channel, account),
acc AS (SELECT channel, account, max(received_at) AS last_received,
               count(*) FILTER (WHERE received_at >= $1) AS messages,
               count(*) FILTER (WHERE received_at >= $1 AND status = 'failed') AS given_up
        FROM inbound_messages GROUP BY channel, account
        UNION ALL
        SELECT u.channel, u.account, NULL, 0, 0 FROM undelivered u
        WHERE NOT EXISTS (SELECT 1 FROM inbound_messages i WHERE i.channel = u.channel AND i.account = u.account)),
run AS (SELECT i.channel, i.account, count(*) AS runs,
               count(*) FILTER (WHERE r.error <> '' OR r.stop_reason IN ('error', 'fatal_tool_error')) AS failed
        FROM runs r JOIN inbound_messages i ON i.id = r.inbound_id
        WHERE r.started_at >= $1 GROUP BY i.channel, i.account),
pend AS (SELECT channel, account, count(*) AS pending FROM outbox
         WHERE delivered_at IS NULL AND failed_at IS NULL GROUP BY channel, account)
SELECT acc.channel, acc.account, acc.messages, coalesce(run.runs, 0),
       coalesce(run.failed, 0) + acc.given_up + coalesce(undelivered.replies, 0), coalesce(undelivered.replies, 0),
       coalesce(pend.pending, 0), coalesce(acc.last_received, 'epoch'::timestamptz),
       coalesce(e.err, ''), coalesce(e.at, 'epoch'::timestamptz)
FROM acc
LEFT JOIN run USING (channel, account)
LEFT JOIN pend USING (channel, account)
LEFT JOIN undelivered USING (channel, account)
LEFT JOIN LATERAL (
    SELECT err, at FROM (
        (SELECT last_error AS err, created_at AS at FROM outbox o
         WHERE o.channel = acc.channel AND o.account = acc.account AND o.last_error <> ''
         ORDER BY o.id DESC LIMIT 1)
        UNION ALL
        (SELECT r.error, r.finished_at FROM runs r JOIN inbound_messages i ON i.id = r.inbound_id
         WHERE i.channel = acc.channel AND i.account = acc.account AND r.error <> ''
         ORDER BY r.finished_at DESC LIMIT 1)) x
    ORDER BY at DESC LIMIT 1) e ON true
ORDER BY acc.channel, acc.account`, since)
	if err != nil {
		return nil, fmt.Errorf("store: account stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AccountStat, error) {
		var a AccountStat
		err := row.Scan(&a.Channel, &a.Account, &a.Messages, &a.Runs, &a.Failures, &a.Undelivered, &a.Pending,
			&a.LastReceived, &a.LastError, &a.LastErrorAt)
		if a.LastReceived.Equal(time.Unix(0, 0)) {
			a.LastReceived = time.Time{} // nothing received: a reports-only account
		}
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: account stats: %w", err)
	}
	return out, nil
}

// Expiry is a named thing that lapses: a cached platform token (never its
// value) or a lease with its holder.
type Expiry struct {
	Name, Holder string
	ExpiresAt    time.Time
}

// TokenExpiries lists the shared token cache's keys and when each expires.
func TokenExpiries(ctx context.Context, q Querier) ([]Expiry, error) {
	return collectExpiries(ctx, q, `SELECT key, '', expires_at FROM token_cache ORDER BY key`)
}

// Leases lists the leases (long connections held by one replica).
func Leases(ctx context.Context, q Querier) ([]Expiry, error) {
	return collectExpiries(ctx, q, `SELECT name, holder, expires_at FROM leases ORDER BY name`)
}

func collectExpiries(ctx context.Context, q Querier, sql string) ([]Expiry, error) {
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("store: expiries: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Expiry])
	if err != nil {
		return nil, fmt.Errorf("store: expiries: %w", err)
	}
	return out, nil
}

// QueueDepth is the unfinished jobs of one queue.
type QueueDepth struct {
	Queue  string
	Jobs   int
	Oldest time.Time // when the oldest unfinished job was created
}

// QueueDepths returns each job queue's unfinished jobs and the oldest one.
func QueueDepths(ctx context.Context, q Querier) ([]QueueDepth, error) {
	rows, err := q.Query(ctx, `
SELECT queue, count(*), min(created_at) FROM river_job
WHERE state NOT IN ('completed', 'discarded', 'cancelled') GROUP BY queue ORDER BY queue`)
	if err != nil {
		return nil, fmt.Errorf("store: queue depths: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[QueueDepth])
	if err != nil {
		return nil, fmt.Errorf("store: queue depths: %w", err)
	}
	return out, nil
}

// ConversationFilter selects sessions; an empty field matches all.
type ConversationFilter struct {
	Channel, UserID, ChatID string
	Since, Until            time.Time // last active within
	Limit                   int       // newest first, default 50
}

// Conversation is one session: a user in a chat of an account.
type Conversation struct {
	ID                               int64
	Channel, Account, ChatID, UserID string
	Messages                         int
	LastActive                       time.Time
}

// conversationColumns select a Conversation from sessions s.
const conversationColumns = `
SELECT s.id, s.channel, s.account, s.chat_id, s.user_id,
       (SELECT count(*) FROM messages m WHERE m.session_id = s.id), s.last_active_at
FROM sessions s`

// FindConversations returns the sessions matching f, most recently active
// first.
func FindConversations(ctx context.Context, q Querier, f ConversationFilter) ([]Conversation, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	rows, err := q.Query(ctx, conversationColumns+`
WHERE ($1 = '' OR s.channel = $1) AND ($2 = '' OR s.user_id = $2) AND ($3 = '' OR s.chat_id = $3)
  AND ($4::timestamptz IS NULL OR s.last_active_at >= $4) AND ($5::timestamptz IS NULL OR s.last_active_at < $5)
ORDER BY s.last_active_at DESC, s.id DESC LIMIT $6`,
		f.Channel, f.UserID, f.ChatID, timeOrNil(f.Since), timeOrNil(f.Until), f.Limit)
	if err != nil {
		return nil, fmt.Errorf("store: find conversations: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Conversation])
	if err != nil {
		return nil, fmt.Errorf("store: find conversations: %w", err)
	}
	return out, nil
}

// GetConversation loads one session; ErrNotFound for an unknown id.
func GetConversation(ctx context.Context, q Querier, id int64) (Conversation, error) {
	rows, err := q.Query(ctx, conversationColumns+` WHERE s.id = $1`, id)
	if err != nil {
		return Conversation{}, fmt.Errorf("store: get conversation: %w", err)
	}
	c, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Conversation])
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("conversation %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("store: get conversation: %w", err)
	}
	return c, nil
}

// ThreadEntry is one message of a conversation: what the user wrote (with
// the platform message id) or an answer (with its run and whether it
// reached the user).
type ThreadEntry struct {
	Role      string // "user" or "assistant"
	Content   string
	At        time.Time
	MsgID     string // the platform message id of a user message
	RunID     string // the run that wrote an answer
	MsgStatus string // the inbound message's status (pending, done, failed, ...)
	// Delivery is how an answer's delivery went: DeliveryFailed when a
	// part was given up undelivered, DeliveryPending while one waits,
	// DeliveryDelivered when every part arrived; "" for a user message
	// or an answer that sent nothing.
	Delivery      string
	DeliveryError string // with DeliveryFailed: the first given-up part's last error
}

// Thread returns a conversation's messages, oldest first, at most limit.
func Thread(ctx context.Context, q Querier, sessionID int64, limit int) ([]ThreadEntry, error) {
	rows, err := q.Query(ctx, `
SELECT role, content, created_at, msg_id, run_id, msg_status, delivery, delivery_error FROM (
    SELECT m.id, m.role, m.content, m.created_at, coalesce(i.platform_msg_id, '') AS msg_id,
           coalesce(m.run_id, '') AS run_id, coalesce(i.status, '') AS msg_status,
           CASE WHEN d.failed THEN $4 WHEN d.delivered THEN $5 WHEN d.parts > 0 THEN $6 ELSE '' END AS delivery,
           coalesce(d.error, '') AS delivery_error
    FROM messages m LEFT JOIN inbound_messages i ON i.id = m.inbound_id AND m.role = 'user'
    LEFT JOIN LATERAL (
        SELECT count(*) AS parts, bool_or(o.failed_at IS NOT NULL) AS failed,
               bool_and(o.delivered_at IS NOT NULL) AS delivered,
               (array_agg(o.last_error ORDER BY o.part) FILTER (WHERE o.failed_at IS NOT NULL))[1] AS error
        FROM outbox o WHERE o.reply_key = $3 || m.inbound_id) d ON m.role = 'assistant' AND m.inbound_id IS NOT NULL
    WHERE m.session_id = $1 ORDER BY m.id DESC LIMIT $2) t
ORDER BY id`, sessionID, limit, AnswerKeyPrefix, DeliveryFailed, DeliveryDelivered, DeliveryPending)
	if err != nil {
		return nil, fmt.Errorf("store: thread: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ThreadEntry])
	if err != nil {
		return nil, fmt.Errorf("store: thread: %w", err)
	}
	return out, nil
}

// RunOrigin is whom a run answered: its conversation and the sender the
// gateway bound to every skill call of the run.
type RunOrigin struct {
	SessionID                        int64
	Channel, Account, ChatID, UserID string
	SenderName, CorpID, MsgID, Text  string
	// Attachments of the message: what they were and became, never their
	// bytes.
	Attachments []AttachmentInfo
}

// AttachmentInfo is what the console shows of an attachment.
type AttachmentInfo struct {
	Part             int
	Kind, Name, MIME string
	Size             int64
	Became, Error    string
	Purged           bool // its bytes are gone (media.retention)
}

// GetRunOrigin returns whom run id answered; ErrNotFound for an unknown run.
func GetRunOrigin(ctx context.Context, q Querier, id string) (RunOrigin, error) {
	var o RunOrigin
	err := q.QueryRow(ctx, `
SELECT s.id, s.channel, s.account, s.chat_id, s.user_id, i.sender_name, i.sender_corp, i.platform_msg_id, i.text
FROM runs r JOIN sessions s ON s.id = r.session_id JOIN inbound_messages i ON i.id = r.inbound_id
WHERE r.id = $1`, id).Scan(&o.SessionID, &o.Channel, &o.Account, &o.ChatID, &o.UserID, &o.SenderName, &o.CorpID, &o.MsgID, &o.Text)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return o, fmt.Errorf("store: run origin: %w", err)
	}
	rows, err := q.Query(ctx, `
SELECT m.part, m.kind, m.name, m.mime, m.size, m.became, m.error, m.data IS NULL AND m.error = ''
FROM runs r JOIN inbound_media m ON m.inbound_id = r.inbound_id WHERE r.id = $1 ORDER BY m.part`, id)
	if err != nil {
		return o, fmt.Errorf("store: run origin: %w", err)
	}
	if o.Attachments, err = pgx.CollectRows(rows, pgx.RowToStructByPos[AttachmentInfo]); err != nil {
		return o, fmt.Errorf("store: run origin: %w", err)
	}
	return o, nil
}

// SkillStat is how one skill's calls went since a moment.
type SkillStat struct {
	Tool   string
	Calls  int
	Errors int
	P95    time.Duration
}

// SkillStats returns call counts, errors and p95 latency per skill over
// the runs started since since.
func SkillStats(ctx context.Context, q Querier, since time.Time) ([]SkillStat, error) {
	rows, err := q.Query(ctx, `
SELECT st.tool, count(*), count(*) FILTER (WHERE st.error <> ''),
       (coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY st.latency_ms), 0) * 1000000)::bigint
FROM run_steps st JOIN runs r ON r.id = st.run_id
WHERE st.kind = 'tool' AND r.started_at >= $1 GROUP BY st.tool ORDER BY st.tool`, since)
	if err != nil {
		return nil, fmt.Errorf("store: skill stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SkillStat])
	if err != nil {
		return nil, fmt.Errorf("store: skill stats: %w", err)
	}
	return out, nil
}

// SkillError is one failed skill call.
type SkillError struct {
	Tool, Error, RunID string
	At                 time.Time // the run's start
}

// LastSkillErrors returns the newest failed skill calls, at most limit.
func LastSkillErrors(ctx context.Context, q Querier, limit int) ([]SkillError, error) {
	rows, err := q.Query(ctx, `
SELECT st.tool, st.error, st.run_id, r.started_at FROM run_steps st JOIN runs r ON r.id = st.run_id
WHERE st.kind = 'tool' AND st.error <> '' ORDER BY r.started_at DESC, st.seq DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: skill errors: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SkillError])
	if err != nil {
		return nil, fmt.Errorf("store: skill errors: %w", err)
	}
	return out, nil
}
