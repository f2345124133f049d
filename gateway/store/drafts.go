package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnswerKeyPrefix starts the reply key of the answer to an inbound
// message; other replies to its conversation (async results) have others.
const AnswerKeyPrefix = "inbound:"

// AnswerKey is the outbox reply key of the answer to inbound message id.
func AnswerKey(inboundID int64) string { return AnswerKeyPrefix + strconv.FormatInt(inboundID, 10) }

// SaveDraft stores the answer so far of the run answering inboundID.
func SaveDraft(ctx context.Context, q Querier, inboundID int64, text string, at time.Time) error {
	_, err := q.Exec(ctx, `
INSERT INTO reply_drafts (inbound_id, text, updated_at) VALUES ($1, $2, $3)
ON CONFLICT (inbound_id) DO UPDATE SET text = EXCLUDED.text, updated_at = EXCLUDED.updated_at`, inboundID, text, at)
	if err != nil {
		return fmt.Errorf("store: save draft: %w", err)
	}
	return nil
}

// ReplyProgress is how far the answer to one inbound message has come.
type ReplyProgress struct {
	Found      bool
	InboundID  int64
	Status     string    // the inbound status
	ReceivedAt time.Time // when the platform delivered the message
	Draft      string    // the run's answer so far (while pending)
	First      string    // the final reply's first part (once answered)
	Parts      int       // the final reply's number of parts
	Shown      bool      // the first part was delivered (shown in a stream)
}

// ProgressOf reads the answer to the message (channel, account, msgID) so
// far, in one round trip: the draft while the run goes on, the first part
// of the reply in the outbox once it is written.
func ProgressOf(ctx context.Context, q Querier, channel, account, msgID string) (ReplyProgress, error) {
	var p ReplyProgress
	var draft, first *string
	var parts *int
	var shown *bool
	err := q.QueryRow(ctx, `
SELECT m.id, m.status, m.received_at, d.text, o.text, o.parts, o.delivered_at IS NOT NULL
FROM inbound_messages m
LEFT JOIN reply_drafts d ON d.inbound_id = m.id
LEFT JOIN outbox o ON o.reply_key = $4 || m.id AND o.part = 0
WHERE m.channel = $1 AND m.account = $2 AND m.platform_msg_id = $3`, channel, account, msgID, AnswerKeyPrefix).Scan(
		&p.InboundID, &p.Status, &p.ReceivedAt, &draft, &first, &parts, &shown)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("store: reply progress: %w", err)
	}
	p.Found = true
	if draft != nil {
		p.Draft = *draft
	}
	if first != nil {
		p.First, p.Parts, p.Shown = *first, *parts, *shown
	}
	return p, nil
}

// MarkFirstPartShown records that the first part of the reply to
// inboundID reached the user through a live reply, and drops its hold.
// rest reports that the part was still undelivered and the reply has
// parts after it, which are now to be delivered.
func MarkFirstPartShown(ctx context.Context, q Querier, inboundID int64, at time.Time) (rest bool, err error) {
	var parts int
	err = q.QueryRow(ctx, `
WITH h AS (DELETE FROM live_holds WHERE reply_key = $1)
UPDATE outbox SET delivered_at = $2, platform_msg_id = 'stream', last_error = '', inline_until = NULL
WHERE reply_key = $1 AND part = 0 AND delivered_at IS NULL AND failed_at IS NULL
RETURNING parts`, AnswerKey(inboundID), at).Scan(&parts)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: mark shown: %w", err)
	}
	return parts > 1, nil
}

// Hold holds back the first part of a message's answer while a live reply
// may show it (live_holds); the zero Hold holds nothing.
type Hold struct {
	Until    time.Time // held until then, unless renewed
	ClosesAt time.Time // never renewed past this (the platform's deadline)
}

// RenewHolds holds the first parts of the answers replyKeys until until,
// or their ClosesAt if sooner: the live replies showing them still run.
func RenewHolds(ctx context.Context, q Querier, replyKeys []string, until time.Time) error {
	_, err := q.Exec(ctx, `UPDATE live_holds SET held_until = LEAST(closes_at, $2) WHERE reply_key = ANY($1)`, replyKeys, until)
	if err != nil {
		return fmt.Errorf("store: renew live holds: %w", err)
	}
	return nil
}

// DropHold releases the hold on the first part of the answer replyKey
// (its live reply ended, or the hold lapsed). waiting reports that the
// answer is in the outbox with that part still to send.
func DropHold(ctx context.Context, q Querier, replyKey string) (waiting bool, err error) {
	err = q.QueryRow(ctx, `
WITH h AS (DELETE FROM live_holds WHERE reply_key = $1)
SELECT EXISTS (SELECT 1 FROM outbox WHERE reply_key = $1 AND part = 0 AND delivered_at IS NULL AND failed_at IS NULL)`,
		replyKey).Scan(&waiting)
	if err != nil {
		return false, fmt.Errorf("store: drop live hold: %w", err)
	}
	return waiting, nil
}
