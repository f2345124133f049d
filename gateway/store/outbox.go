package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/channels"
)

// Reply is one reply to write to the outbox, already split into parts
// within its channel's limits.
type Reply struct {
	Key      string // idempotency key, e.g. "inbound:42"; one reply per key
	Channel  string
	Account  string
	ReplyTo  json.RawMessage // the channel's own address of the conversation
	OrderKey string          // the conversation; its parts go out in order
	Format   string          // channels.FormatText | FormatMarkdown | FormatImage
	Parts    []string
	Image    *channels.Image // with FormatImage: the one part
	CardID   string          // with FormatCard and FormatCardUpdate: the card (cards)
	// InlineUntil, when set: the committing replica sends the parts itself
	// and no delivery job is queued; a part still in flight then is handed
	// to one (TakeLapsedInline). InlineFrom is the commit's time.
	InlineUntil *time.Time
	InlineFrom  time.Time
}

// OutboxPart is one part of a reply waiting for, or done with, delivery.
type OutboxPart struct {
	ID             int64
	ReplyKey       string
	Part           int
	Parts          int
	Channel        string
	Account        string
	ReplyTo        json.RawMessage
	OrderKey       string
	Format         string
	Text           string
	Image          *channels.Image
	Attempts       int
	FirstAttemptAt *time.Time
	// Media is Image's upload, once the delivery layer made it (SetMedia):
	// its platform id, and when the platform forgets it (nil: never).
	MediaID        string
	MediaExpiresAt *time.Time
	// HeldUntil: a live reply may still show this part (the first of an
	// answer) until then; nil: no hold.
	HeldUntil *time.Time
	// CardID is the card a FormatCard or FormatCardUpdate part shows.
	CardID string
	// InlineUntil: the replica that committed the part sends it itself
	// until then (Reply.InlineUntil).
	InlineUntil *time.Time
}

// PreRecorded reports whether p's one recorded attempt is the one its
// committing replica's inline send makes, written with the part
// (InsertOutbox): that send records no attempt of its own. Any other
// sender records one, since that send may have reached the platform.
func (p OutboxPart) PreRecorded() bool {
	return p.InlineUntil != nil && p.Attempts == 1 && p.CardID == "" && p.Image == nil
}

// InsertOutbox writes the parts of one reply under its idempotency key. A
// reply already written under the same key is left as it is, so a re-run
// can never queue a second copy. It reports whether the parts were new.
func InsertOutbox(ctx context.Context, q Querier, r Reply) (bool, error) {
	replyTo := r.ReplyTo
	if len(replyTo) == 0 {
		replyTo = json.RawMessage(`{}`)
	}
	parts := r.Parts
	var media []byte
	var mediaName string
	if r.Image != nil {
		parts, media, mediaName = []string{""}, r.Image.PNG, r.Image.Name
	}
	// A text part its replica sends itself has that attempt recorded now
	// (OutboxPart.PreRecorded): one written row fewer per part (issue 39).
	var attempts int
	var firstAttempt *time.Time
	if r.InlineUntil != nil && r.CardID == "" && r.Image == nil {
		attempts, firstAttempt = 1, &r.InlineFrom
	}
	inserted := false
	for i, text := range parts {
		tag, err := q.Exec(ctx, `
INSERT INTO outbox (reply_key, part, parts, channel, account, reply_to, order_key, format, text, media, media_name, card_id,
                    inline_until, attempts, first_attempt_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (reply_key, part) DO NOTHING`,
			r.Key, i, len(parts), r.Channel, r.Account, []byte(replyTo), r.OrderKey, r.Format, text, media, mediaName, r.CardID,
			r.InlineUntil, attempts, firstAttempt)
		if err != nil {
			return false, fmt.Errorf("store: insert outbox: %w", err)
		}
		inserted = inserted || tag.RowsAffected() > 0
	}
	return inserted, nil
}

// OrderKeyOf returns the conversation a reply belongs to ("" if unknown).
func OrderKeyOf(ctx context.Context, q Querier, replyKey string) (string, error) {
	var key string
	err := q.QueryRow(ctx, `SELECT order_key FROM outbox WHERE reply_key = $1 ORDER BY part LIMIT 1`, replyKey).Scan(&key)
	if err != nil && err != pgx.ErrNoRows {
		return "", fmt.Errorf("store: outbox order key: %w", err)
	}
	return key, nil
}

// UndeliveredInOrder returns the parts of a conversation not yet delivered
// nor given up on, in the order they were written, each first part with
// its live hold. An empty orderKey selects the parts of replyKey alone
// (replies written before order keys).
//
// The two cases are two statements: one statement choosing its column
// with a CASE on the parameters had no index it could use in its generic
// plan, and walked every undelivered part of every conversation: 1.8 ms a
// delivery with 5,000 replies waiting (BenchmarkFiveThousandWaiting),
// growing with the backlog.
func UndeliveredInOrder(ctx context.Context, q Querier, orderKey, replyKey string) ([]OutboxPart, error) {
	sql, key := undeliveredQuery(orderKey, replyKey, false)
	rows, err := q.Query(ctx, sql, key)
	if err != nil {
		return nil, fmt.Errorf("store: outbox: %w", err)
	}
	return collectParts(rows)
}

// undeliveredQuery is UndeliveredInOrder's statement and its argument;
// locked, it waits for a part's update still in flight (see
// TryLockUndelivered) and reads the part as that update left it.
func undeliveredQuery(orderKey, replyKey string, locked bool) (string, string) {
	match, key := `o.order_key = $1`, orderKey
	if orderKey == "" {
		match, key = `o.reply_key = $1`, replyKey
	}
	lock := ""
	if locked {
		lock = "\nFOR UPDATE OF o"
	}
	return `
SELECT o.id, o.reply_key, o.part, o.parts, o.channel, o.account, o.reply_to, o.order_key, o.format, o.text,
       o.media, o.media_name, o.attempts, o.first_attempt_at, o.media_id, o.media_expires_at, h.held_until, o.card_id,
       o.inline_until
FROM outbox o
LEFT JOIN live_holds h ON o.part = 0 AND h.reply_key = o.reply_key
WHERE o.delivered_at IS NULL AND o.failed_at IS NULL AND ` + match + `
ORDER BY o.id` + lock, key
}

func collectParts(rows pgx.Rows) ([]OutboxPart, error) {
	parts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OutboxPart, error) {
		var p OutboxPart
		var media []byte
		var mediaName string
		err := row.Scan(&p.ID, &p.ReplyKey, &p.Part, &p.Parts, &p.Channel, &p.Account, &p.ReplyTo, &p.OrderKey,
			&p.Format, &p.Text, &media, &mediaName, &p.Attempts, &p.FirstAttemptAt, &p.MediaID, &p.MediaExpiresAt, &p.HeldUntil, &p.CardID,
			&p.InlineUntil)
		if media != nil {
			p.Image = &channels.Image{Name: mediaName, PNG: media}
		}
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: outbox: %w", err)
	}
	return parts, nil
}

// SetMedia keeps the upload of an image part: its media id, when it was
// uploaded and when the platform forgets it (zero: never). It is written
// before the part is sent, so every later attempt sends the same id.
func SetMedia(ctx context.Context, q Querier, id int64, mediaID string, uploadedAt, expiresAt time.Time) error {
	_, err := q.Exec(ctx, `UPDATE outbox SET media_id = $2, media_uploaded_at = $3, media_expires_at = $4 WHERE id = $1`,
		id, mediaID, uploadedAt, timeOrNil(expiresAt))
	if err != nil {
		return fmt.Errorf("store: set media: %w", err)
	}
	return nil
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

const markDelivered = `UPDATE outbox SET delivered_at = $2, platform_msg_id = $3, last_error = '', inline_until = NULL WHERE id = $1`

// MarkDelivered records a successful delivery.
func MarkDelivered(ctx context.Context, q Querier, id int64, platformMsgID string, at time.Time) error {
	_, err := q.Exec(ctx, markDelivered, id, at, platformMsgID)
	if err != nil {
		return fmt.Errorf("store: mark delivered: %w", err)
	}
	return nil
}

// MarkSendError records why an attempt failed; failed marks the part as
// given up.
func MarkSendError(ctx context.Context, q Querier, id int64, msg string, failed bool, at time.Time) error {
	_, err := q.Exec(ctx, `
UPDATE outbox SET last_error = $2, failed_at = CASE WHEN $3 THEN $4 ELSE failed_at END,
       inline_until = CASE WHEN $3 THEN NULL ELSE inline_until END
 WHERE id = $1`,
		id, msg, failed, at)
	if err != nil {
		return fmt.Errorf("store: mark send error: %w", err)
	}
	return nil
}

// InlineReply is a reply whose parts the committing replica was to send
// itself (Reply.InlineUntil).
type InlineReply struct {
	Key, Channel, Account string
	OrderKey              string // its conversation; "" when not known
}

// EndInline hands reply key's parts from the replica that committed them
// to a delivery job, which the caller queues in the same transaction.
// unsent: none of the parts left reached the platform (the conversation
// was busy, its rate window full, a live reply held it), so the attempt
// recorded with each at the commit (OutboxPart.PreRecorded) is taken
// back. Left, it made the job's send a second attempt, with the
// platform's duplicate check on, and WeCom's check drops a message whose
// content the user got just before (two answers "好的" in a row: the
// second was never shown; TestInlineSendFoundBusyStaysAFirstAttempt).
func EndInline(ctx context.Context, q Querier, key string, unsent bool) error {
	if _, err := q.Exec(ctx, `
UPDATE outbox SET inline_until = NULL,
       attempts = CASE WHEN $2 AND attempts = 1 AND delivered_at IS NULL AND failed_at IS NULL THEN 0 ELSE attempts END,
       first_attempt_at = CASE WHEN $2 AND attempts = 1 AND delivered_at IS NULL AND failed_at IS NULL THEN NULL ELSE first_attempt_at END
 WHERE reply_key = $1 AND inline_until IS NOT NULL`, key, unsent); err != nil {
		return fmt.Errorf("store: end inline delivery of %s: %w", key, err)
	}
	return nil
}

// TakeLapsedInline ends the inline delivery of up to limit replies whose
// parts are still in flight after their replica's time ran out before
// now (it died, or lost Postgres), and returns them, in tx; the caller
// queues their delivery jobs in the same tx. Parts another sweep has
// locked are skipped, so each reply is taken once.
func TakeLapsedInline(ctx context.Context, tx pgx.Tx, now time.Time, limit int) ([]InlineReply, error) {
	rows, err := tx.Query(ctx, `
WITH lapsed AS (
  SELECT id FROM outbox WHERE inline_until <= $1 ORDER BY inline_until LIMIT $2 FOR UPDATE SKIP LOCKED
)
UPDATE outbox o SET inline_until = NULL FROM lapsed WHERE o.id = lapsed.id
RETURNING o.reply_key, o.channel, o.account, o.order_key`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("store: lapsed inline deliveries: %w", err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[InlineReply])
	if err != nil {
		return nil, fmt.Errorf("store: lapsed inline deliveries: %w", err)
	}
	seen := map[string]bool{}
	var out []InlineReply
	for _, p := range parts {
		if !seen[p.Key] {
			seen[p.Key] = true
			out = append(out, p)
		}
	}
	return out, nil
}
