package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// OutboxPart is one part of a reply waiting for, or done with, delivery.
type OutboxPart struct {
	ID             int64
	ReplyKey       string
	Part           int
	Channel        string
	Account        string
	ReplyTo        channels.ReplyHandle
	Text           string
	Attempts       int
	FirstAttemptAt *time.Time
	DeliveredAt    *time.Time
}

// InsertOutbox writes the parts of one reply under an idempotency key. A
// reply already written under the same key is left as it is, so a re-run
// can never queue a second copy. It reports whether the parts were new.
func InsertOutbox(ctx context.Context, q Querier, replyKey, channel, account string, replyTo channels.ReplyHandle, parts []string) (bool, error) {
	rt, err := json.Marshal(replyTo)
	if err != nil {
		return false, fmt.Errorf("store: insert outbox: %w", err)
	}
	inserted := false
	for i, text := range parts {
		tag, err := q.Exec(ctx, `
INSERT INTO outbox (reply_key, part, channel, account, reply_to, text)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (reply_key, part) DO NOTHING`, replyKey, i, channel, account, rt, text)
		if err != nil {
			return false, fmt.Errorf("store: insert outbox: %w", err)
		}
		inserted = inserted || tag.RowsAffected() > 0
	}
	return inserted, nil
}

// UndeliveredParts returns the parts of a reply not yet delivered nor given
// up on, in order.
func UndeliveredParts(ctx context.Context, q Querier, replyKey string) ([]OutboxPart, error) {
	rows, err := q.Query(ctx, `
SELECT id, reply_key, part, channel, account, reply_to, text, attempts, first_attempt_at, delivered_at
FROM outbox WHERE reply_key = $1 AND delivered_at IS NULL AND failed_at IS NULL ORDER BY part`, replyKey)
	if err != nil {
		return nil, fmt.Errorf("store: outbox: %w", err)
	}
	defer rows.Close()
	var out []OutboxPart
	for rows.Next() {
		var p OutboxPart
		var rt []byte
		if err := rows.Scan(&p.ID, &p.ReplyKey, &p.Part, &p.Channel, &p.Account, &rt, &p.Text, &p.Attempts, &p.FirstAttemptAt, &p.DeliveredAt); err != nil {
			return nil, fmt.Errorf("store: outbox: %w", err)
		}
		if err := json.Unmarshal(rt, &p.ReplyTo); err != nil {
			return nil, fmt.Errorf("store: outbox %d: reply_to: %w", p.ID, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// MarkAttempt records that a delivery attempt of a part starts now. It is
// committed before the send, so after a crash the next attempt knows an
// earlier one may have reached the platform.
func MarkAttempt(ctx context.Context, q Querier, id int64, at time.Time) (attempts int, firstAt time.Time, err error) {
	err = q.QueryRow(ctx, `
UPDATE outbox SET attempts = attempts + 1, first_attempt_at = COALESCE(first_attempt_at, $2)
WHERE id = $1 RETURNING attempts, first_attempt_at`, id, at).Scan(&attempts, &firstAt)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: mark attempt: %w", err)
	}
	return attempts, firstAt, nil
}

// MarkDelivered records a successful delivery.
func MarkDelivered(ctx context.Context, q Querier, id int64, platformMsgID string, at time.Time) error {
	_, err := q.Exec(ctx, `UPDATE outbox SET delivered_at = $2, platform_msg_id = $3, last_error = '' WHERE id = $1`, id, at, platformMsgID)
	if err != nil {
		return fmt.Errorf("store: mark delivered: %w", err)
	}
	return nil
}

// MarkSendError records why an attempt failed; failed marks the part as
// given up.
func MarkSendError(ctx context.Context, q Querier, id int64, msg string, failed bool, at time.Time) error {
	_, err := q.Exec(ctx, `
UPDATE outbox SET last_error = $2, failed_at = CASE WHEN $3 THEN $4 ELSE failed_at END WHERE id = $1`,
		id, msg, failed, at)
	if err != nil {
		return fmt.Errorf("store: mark send error: %w", err)
	}
	return nil
}
