package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hermes-gw/hermes/channels"
)

// Querier is what pgx.Tx, *pgxpool.Pool and *pgxpool.Conn have in common.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Inbound statuses.
const (
	InboundPending = "pending"
	InboundDone    = "done"
	InboundIgnored = "ignored"
	InboundFailed  = "failed"
)

// InboundRow is a stored inbound message.
type InboundRow struct {
	ID         int64
	In         channels.Inbound
	Status     string
	ReceivedAt time.Time
}

// InsertInbound records a verified inbound message. inserted is false when
// the platform had delivered the same message before (same channel, account
// and platform message id): the caller must then enqueue nothing.
func InsertInbound(ctx context.Context, tx Querier, in channels.Inbound, status string) (id int64, inserted bool, err error) {
	return InsertInboundHeld(ctx, tx, in, status, Hold{})
}

// InsertInboundHeld is InsertInbound that also holds the first part of
// the message's answer for a live reply (live_holds), in the same
// statement, when the message is new and hold is not zero.
func InsertInboundHeld(ctx context.Context, tx Querier, in channels.Inbound, status string, hold Hold) (id int64, inserted bool, err error) {
	ids, err := InsertInbounds(ctx, tx, []NewInbound{{In: in, Status: status, Hold: hold}})
	if err != nil {
		return 0, false, err
	}
	return ids[0], ids[0] != 0, nil
}

// NewInbound is one message for InsertInbounds.
type NewInbound struct {
	In     channels.Inbound
	Status string
	Hold   Hold // zero: no live hold
	// InlineUntil, when set: the accepting replica runs the message itself
	// and no job is queued for it (TakeLapsedInlineInbound).
	InlineUntil *time.Time
}

// insertInbounds stores the rows of its arrays (one per message, in
// order) whose platform message id is new, with their live holds, in one
// statement: one round trip and one plan however many messages a batch of
// the ack path holds.
const insertInbounds = `
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
        $8::text[], $9::text[], $10::text[], $11::bool[], $12::text[], $13::text[], $14::text[], $15::text[],
        $16::text[], $17::timestamptz[], $18::timestamptz[], $20::timestamptz[]) WITH ORDINALITY
    AS t(channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, sender_name, sender_corp,
        text, mentioned, reply_to, raw, status, parts, quote, held_until, closes_at, inline_until, n)
), m AS (
    INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type,
        sender_id, sender_name, sender_corp, text, mentioned, reply_to, raw, status, parts, quote, inline_until)
    SELECT channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, sender_name, sender_corp,
        text, mentioned, reply_to::jsonb, raw::jsonb, status, parts::jsonb, quote::jsonb, inline_until FROM input ORDER BY n
    ON CONFLICT (channel, account, platform_msg_id) DO NOTHING
    RETURNING id, channel, account, platform_msg_id
), h AS (
    INSERT INTO live_holds (reply_key, held_until, closes_at)
    SELECT $19::text || m.id, i.held_until, i.closes_at FROM m JOIN input i USING (channel, account, platform_msg_id)
    WHERE i.held_until IS NOT NULL
)
SELECT input.n, m.id FROM m JOIN input USING (channel, account, platform_msg_id)`

// InsertInbounds records verified inbound messages in one statement.
// ids[i] is msgs[i]'s new id, or 0 when the platform had delivered the same
// message before (same channel, account and platform message id), or an
// earlier entry of msgs is the same message: its caller must then enqueue
// nothing.
func InsertInbounds(ctx context.Context, tx Querier, msgs []NewInbound) (ids []int64, err error) {
	var (
		channel, account, msgID, msgType, chatID, chatType []string
		senderID, senderName, senderCorp, body, status     []string
		mentioned                                          []bool
		replyTo                                            []string
		raw, parts, quote                                  []*string
		heldUntil, closesAt, inlineUntil                   []*time.Time
		row                                                []int // the msgs index of each row sent
	)
	type key struct{ channel, account, msgID string }
	seen := make(map[key]bool, len(msgs))
	for i, m := range msgs {
		in := m.In
		k := key{in.Channel, in.Account, in.MsgID}
		if seen[k] {
			continue // the same message twice: its twin is a repeat
		}
		seen[k] = true
		row = append(row, i)
		channel, account, msgID = append(channel, in.Channel), append(account, in.Account), append(msgID, in.MsgID)
		msgType, chatID, chatType = append(msgType, in.MsgType), append(chatID, in.ChatID), append(chatType, in.ChatType)
		senderID, senderName, senderCorp = append(senderID, in.Sender.UserID), append(senderName, in.Sender.Name), append(senderCorp, in.Sender.CorpID)
		body, status, mentioned = append(body, in.Text), append(status, m.Status), append(mentioned, in.Mentioned)
		replyTo = append(replyTo, cmp.Or(string(in.ReplyTo), `{}`))
		var r *string
		if len(in.Raw) > 0 {
			s := string(in.Raw)
			r = &s
		}
		raw, parts, quote = append(raw, r), append(parts, marshalOrNil(in.Parts)), append(quote, marshalOrNil(in.Quote))
		var until, closes *time.Time
		if !m.Hold.Until.IsZero() {
			until, closes = &m.Hold.Until, &m.Hold.ClosesAt
		}
		heldUntil, closesAt = append(heldUntil, until), append(closesAt, closes)
		inlineUntil = append(inlineUntil, m.InlineUntil)
	}
	rows, err := tx.Query(ctx, insertInbounds, channel, account, msgID, msgType, chatID, chatType, senderID,
		senderName, senderCorp, body, mentioned, replyTo, raw, status, parts, quote, heldUntil, closesAt, AnswerKeyPrefix, inlineUntil)
	if err != nil {
		return nil, fmt.Errorf("store: insert inbound: %w", err)
	}
	defer rows.Close()
	ids = make([]int64, len(msgs))
	for rows.Next() {
		var ord, id int64
		if err := rows.Scan(&ord, &id); err != nil {
			return nil, fmt.Errorf("store: insert inbound: %w", err)
		}
		ids[row[ord-1]] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: insert inbound: %w", err)
	}
	return ids, nil
}

// GetInbound loads one inbound message. It returns ErrNotFound if id is unknown.
func GetInbound(ctx context.Context, q Querier, id int64) (InboundRow, error) {
	var r InboundRow
	err := scanInbound(q.QueryRow(ctx, `SELECT `+inboundColumnsSQL+` FROM inbound_messages m WHERE m.id = $1`, id), &r)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("inbound %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("store: get inbound %d: %w", id, err)
	}
	return r, nil
}

// inboundColumnsSQL are the columns of inbound message m that scanInbound
// reads, in its order.
const inboundColumnsSQL = `m.id, m.channel, m.account, m.platform_msg_id, m.msg_type, m.chat_id, m.chat_type, m.sender_id,
       m.sender_name, m.sender_corp, m.text, m.mentioned, m.reply_to, m.raw::text, m.status, m.received_at, m.parts, m.quote`

// scanInbound scans a row of inboundColumnsSQL, then extra, into r.
func scanInbound(row pgx.Row, r *InboundRow, extra ...any) error {
	var replyTo []byte
	var raw *string
	var parts, quote []byte
	dest := append([]any{&r.ID, &r.In.Channel, &r.In.Account, &r.In.MsgID, &r.In.MsgType, &r.In.ChatID, &r.In.ChatType,
		&r.In.Sender.UserID, &r.In.Sender.Name, &r.In.Sender.CorpID, &r.In.Text, &r.In.Mentioned,
		&replyTo, &raw, &r.Status, &r.ReceivedAt, &parts, &quote}, extra...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	r.In.ReplyTo = replyTo
	if raw != nil {
		r.In.Raw = json.RawMessage(*raw)
	}
	if len(parts) > 0 {
		if err := json.Unmarshal(parts, &r.In.Parts); err != nil {
			return fmt.Errorf("parts: %w", err)
		}
	}
	if len(quote) > 0 {
		if err := json.Unmarshal(quote, &r.In.Quote); err != nil {
			return fmt.Errorf("quote: %w", err)
		}
	}
	return nil
}

// marshalOrNil is v as JSON text for a jsonb column, or NULL when v is
// empty.
func marshalOrNil(v any) *string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "[]" {
		return nil
	}
	s := string(b)
	return &s
}

// inboundInSession reads inbound message id, of the session key, with
// whether an earlier message of that session still waits for an answer
// (answers keep the users' order), in one round trip.
//
// The session's messages are looked up by the key as parameters, so its
// plan, generic or not, finds them by the pending index, even one made on
// an empty or young table. (An earlier form joined the message's own
// columns: a generic plan cached on a young table walked every message of
// the account through the unique key, 5-7 ms a run at 12,000 messages.)
func inboundInSession(ctx context.Context, q Querier, id int64, key SessionKey) (r InboundRow, olderPending bool, err error) {
	err = scanInbound(q.QueryRow(ctx, `
SELECT `+inboundColumnsSQL+`, coalesce((SELECT o.id FROM inbound_messages o
  WHERE o.channel = $2 AND o.account = $3 AND o.chat_id = $4 AND o.sender_id = $5 AND o.status = 'pending'
  ORDER BY o.id LIMIT 1) < m.id, false)
FROM inbound_messages m WHERE m.id = $1`, id, key.Channel, key.Account, key.ChatID, key.UserID), &r, &olderPending)
	if err != nil {
		return r, false, fmt.Errorf("store: inbound %d in its session: %w", id, err)
	}
	return r, olderPending, nil
}

// SetInboundStatus marks an inbound message processed.
func SetInboundStatus(ctx context.Context, q Querier, id int64, status string, at time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE inbound_messages SET status = $2, processed_at = $3, inline_until = NULL WHERE id = $1`, id, status, at); err != nil {
		return fmt.Errorf("store: set inbound status: %w", err)
	}
	return nil
}

// SetInboundStatusNext marks an inbound message of the session key
// processed, as SetInboundStatus, and returns the session's oldest other
// message still to answer, with its channel (ok false when none waits),
// in one statement (issue 39: a statement less per answer). It sees the
// messages a separate read after the update would: the caller's
// transaction holds the session's row (HoldSessionLease), and a message
// that found the session busy was stored before it tried. Its messages
// are looked up by the key as parameters, as inboundInSession's are.
func SetInboundStatusNext(ctx context.Context, q Querier, id int64, key SessionKey, status string, at time.Time) (next int64, channel string, ok bool, err error) {
	err = q.QueryRow(ctx, `
WITH d AS (UPDATE inbound_messages SET status = $2, processed_at = $3, inline_until = NULL WHERE id = $1)
SELECT o.id, o.channel FROM inbound_messages o
 WHERE o.channel = $4 AND o.account = $5 AND o.chat_id = $6 AND o.sender_id = $7 AND o.status = 'pending' AND o.id <> $1
 ORDER BY o.id LIMIT 1`, id, status, at, key.Channel, key.Account, key.ChatID, key.UserID).Scan(&next, &channel)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("store: set inbound status: %w", err)
	}
	return next, channel, true, nil
}

// EmptyInbound drops the content of inbound message id (its text, parts,
// quote and the platform's raw payload), keeping the row: its id still
// dedupes the platform's retries, and the console still counts it.
func EmptyInbound(ctx context.Context, q Querier, id int64) error {
	if _, err := q.Exec(ctx, `UPDATE inbound_messages SET text = '', raw = NULL, parts = NULL, quote = NULL WHERE id = $1`, id); err != nil {
		return fmt.Errorf("store: empty inbound %d: %w", id, err)
	}
	return nil
}

// InboundStatus returns the status of the message (channel, account,
// msgID), "" when there is none.
func InboundStatus(ctx context.Context, q Querier, channel, account, msgID string) (string, error) {
	var status string
	err := q.QueryRow(ctx, `SELECT status FROM inbound_messages WHERE channel = $1 AND account = $2 AND platform_msg_id = $3`,
		channel, account, msgID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: inbound status: %w", err)
	}
	return status, nil
}

// InlineInbound is a message its accepting replica was to run itself
// (NewInbound.InlineUntil).
type InlineInbound struct {
	ID      int64
	Channel string
}

// EndInlineInbound hands message id from the replica that accepted it to
// a job, which the caller queues in the same transaction.
func EndInlineInbound(ctx context.Context, q Querier, id int64) error {
	if _, err := q.Exec(ctx, `UPDATE inbound_messages SET inline_until = NULL WHERE id = $1 AND inline_until IS NOT NULL`, id); err != nil {
		return fmt.Errorf("store: end inline run of inbound %d: %w", id, err)
	}
	return nil
}

// TakeLapsedInlineInbound ends the inline run of up to limit messages
// whose time ran out before now with no run holding their session's lease
// for them (their replica died before the run began, or it is waiting
// for an earlier message of the session), and returns them, in tx; the
// caller queues their jobs in the same tx. Rows another sweep has locked
// are skipped.
func TakeLapsedInlineInbound(ctx context.Context, tx pgx.Tx, now time.Time, limit int) ([]InlineInbound, error) {
	rows, err := tx.Query(ctx, `
WITH lapsed AS (
  SELECT m.id FROM inbound_messages m
   WHERE m.inline_until <= $1 AND NOT EXISTS (SELECT 1 FROM sessions s
     WHERE s.channel = m.channel AND s.account = m.account AND s.chat_id = m.chat_id AND s.user_id = m.sender_id
       AND s.lease_inbound_id = m.id)
   ORDER BY m.inline_until LIMIT $2 FOR UPDATE SKIP LOCKED
)
UPDATE inbound_messages m SET inline_until = NULL FROM lapsed WHERE m.id = lapsed.id
RETURNING m.id, m.channel`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("store: lapsed inline runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[InlineInbound])
	if err != nil {
		return nil, fmt.Errorf("store: lapsed inline runs: %w", err)
	}
	return out, nil
}
