package store

import (
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
	replyTo := []byte(in.ReplyTo)
	if len(replyTo) == 0 {
		replyTo = []byte(`{}`)
	}
	var raw any
	if len(in.Raw) > 0 {
		raw = string(in.Raw)
	}
	parts, quote := marshalOrNil(in.Parts), marshalOrNil(in.Quote)
	args := []any{in.Channel, in.Account, in.MsgID, in.MsgType, in.ChatID, in.ChatType,
		in.Sender.UserID, in.Sender.Name, in.Sender.CorpID, in.Text, in.Mentioned, replyTo, raw, status, parts, quote}
	insert := `
INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type,
    sender_id, sender_name, sender_corp, text, mentioned, reply_to, raw, status, parts, quote)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13::jsonb,$14,$15::jsonb,$16::jsonb)
ON CONFLICT (channel, account, platform_msg_id) DO NOTHING
RETURNING id`
	if !hold.Until.IsZero() {
		// One round trip in the ack path: the hold is written by the same
		// statement, only for a message that is new.
		insert = `WITH m AS (` + insert + `),
h AS (INSERT INTO live_holds (reply_key, held_until, closes_at) SELECT $17::text || id, $18, $19 FROM m)
SELECT id FROM m`
		args = append(args, AnswerKeyPrefix, hold.Until, hold.ClosesAt)
	}
	err = tx.QueryRow(ctx, insert, args...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: insert inbound: %w", err)
	}
	return id, true, nil
}

// GetInbound loads one inbound message. It returns ErrNotFound if id is unknown.
func GetInbound(ctx context.Context, q Querier, id int64) (InboundRow, error) {
	var r InboundRow
	var replyTo []byte
	var raw *string
	var parts, quote []byte
	err := q.QueryRow(ctx, `
SELECT id, channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, sender_name,
       sender_corp, text, mentioned, reply_to, raw::text, status, received_at, parts, quote
FROM inbound_messages WHERE id = $1`, id).Scan(
		&r.ID, &r.In.Channel, &r.In.Account, &r.In.MsgID, &r.In.MsgType, &r.In.ChatID, &r.In.ChatType,
		&r.In.Sender.UserID, &r.In.Sender.Name, &r.In.Sender.CorpID, &r.In.Text, &r.In.Mentioned,
		&replyTo, &raw, &r.Status, &r.ReceivedAt, &parts, &quote)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("inbound %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("store: get inbound %d: %w", id, err)
	}
	r.In.ReplyTo = replyTo
	if raw != nil {
		r.In.Raw = json.RawMessage(*raw)
	}
	if len(parts) > 0 {
		if err := json.Unmarshal(parts, &r.In.Parts); err != nil {
			return r, fmt.Errorf("store: inbound %d parts: %w", id, err)
		}
	}
	if len(quote) > 0 {
		if err := json.Unmarshal(quote, &r.In.Quote); err != nil {
			return r, fmt.Errorf("store: inbound %d quote: %w", id, err)
		}
	}
	return r, nil
}

// marshalOrNil is v as JSON text for a jsonb column, or NULL when v is
// empty.
func marshalOrNil(v any) any {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "[]" {
		return nil
	}
	return string(b)
}

// StatusInSession re-reads a message's status and whether an earlier
// message of the same session still waits for an answer (answers keep the
// users' order), in one round trip.
func StatusInSession(ctx context.Context, q Querier, r InboundRow) (status string, olderPending bool, err error) {
	err = q.QueryRow(ctx, `
SELECT m.status, EXISTS (SELECT 1 FROM inbound_messages o
 WHERE o.channel = m.channel AND o.account = m.account AND o.chat_id = m.chat_id AND o.sender_id = m.sender_id
   AND o.status = 'pending' AND o.id < m.id)
FROM inbound_messages m WHERE m.id = $1`, r.ID).Scan(&status, &olderPending)
	if err != nil {
		return "", false, fmt.Errorf("store: inbound status: %w", err)
	}
	return status, olderPending, nil
}

// SetInboundStatus marks an inbound message processed.
func SetInboundStatus(ctx context.Context, q Querier, id int64, status string, at time.Time) error {
	if _, err := q.Exec(ctx, `UPDATE inbound_messages SET status = $2, processed_at = $3 WHERE id = $1`, id, status, at); err != nil {
		return fmt.Errorf("store: set inbound status: %w", err)
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
