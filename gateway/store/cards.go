package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/channels"
)

// Card kinds and states (migrations/00026_cards.sql).
const (
	CardConfirm = "confirm"
	CardChoice  = "choice"
	// CardRate is an answer sent as a card with the rating buttons; its
	// run is the run that answered, and it takes a rating, not a message.
	CardRate = "rate"

	CardPending = "pending"
	CardClaimed = "claimed"
	CardExpired = "expired"
)

// Card is one interactive card: what it asks, of whom, for which run.
type Card struct {
	ID, Channel, Account string
	Kind                 string // CardConfirm | CardChoice
	SessionID            int64
	RunID                string // the run whose pending the card answers
	ChatID, ChatType     string
	ReplyTo              json.RawMessage
	Requester            channels.Identity // the asker, from the message that asked
	RequesterRef         string            // the platform id a tap by the asker carries
	Title, Body          string
	Buttons              []channels.Button
	State, Action        string
	MessageID            string
	CreatedAt, ExpiresAt time.Time
}

// InsertCard stores a new card.
func InsertCard(ctx context.Context, q Querier, c Card) error {
	buttons, err := json.Marshal(c.Buttons)
	if err != nil {
		return fmt.Errorf("store: insert card: %w", err)
	}
	replyTo := c.ReplyTo
	if len(replyTo) == 0 {
		replyTo = json.RawMessage(`{}`)
	}
	_, err = q.Exec(ctx, `
INSERT INTO cards (id, channel, account, kind, session_id, run_id, chat_id, chat_type, reply_to, requester,
  requester_name, requester_corp, requester_ref, title, body, options, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
		c.ID, c.Channel, c.Account, c.Kind, c.SessionID, c.RunID, c.ChatID, c.ChatType, []byte(replyTo),
		c.Requester.UserID, c.Requester.Name, c.Requester.CorpID, c.RequesterRef, c.Title, c.Body, buttons,
		c.CreatedAt, c.ExpiresAt)
	if err != nil {
		return fmt.Errorf("store: insert card: %w", err)
	}
	return nil
}

const cardColumns = `id, channel, account, kind, session_id, run_id, chat_id, chat_type, reply_to, requester,
  requester_name, requester_corp, requester_ref, title, body, options, state, action, message_id, created_at, expires_at`

func scanCard(row pgx.Row) (Card, error) {
	var c Card
	var buttons []byte
	err := row.Scan(&c.ID, &c.Channel, &c.Account, &c.Kind, &c.SessionID, &c.RunID, &c.ChatID, &c.ChatType, &c.ReplyTo,
		&c.Requester.UserID, &c.Requester.Name, &c.Requester.CorpID, &c.RequesterRef, &c.Title, &c.Body, &buttons,
		&c.State, &c.Action, &c.MessageID, &c.CreatedAt, &c.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrNotFound
	}
	if err != nil {
		return c, fmt.Errorf("store: card: %w", err)
	}
	if err := json.Unmarshal(buttons, &c.Buttons); err != nil {
		return c, fmt.Errorf("store: card %s buttons: %w", c.ID, err)
	}
	return c, nil
}

// GetCard loads a card. Errors wrap ErrNotFound when there is none.
func GetCard(ctx context.Context, q Querier, id string) (Card, error) {
	return scanCard(q.QueryRow(ctx, `SELECT `+cardColumns+` FROM cards WHERE id = $1`, id))
}

// LockCard loads a card of channel/account and locks it until tx ends, so
// that one click at a time decides its fate. Errors wrap ErrNotFound.
func LockCard(ctx context.Context, tx pgx.Tx, channel, account, id string) (Card, error) {
	return scanCard(tx.QueryRow(ctx, `SELECT `+cardColumns+` FROM cards
WHERE id = $1 AND channel = $2 AND account = $3 FOR UPDATE`, id, channel, account))
}

// ClaimCard takes a pending card for action, only while it has not
// expired at now; false when it was not pending or has expired. Whatever
// races (a double tap, two replicas, a typed answer), one claim wins.
func ClaimCard(ctx context.Context, q Querier, id, action string, now time.Time) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE cards SET state = 'claimed', action = $2, claimed_at = $3
WHERE id = $1 AND state = 'pending' AND expires_at > $3`, id, action, now)
	if err != nil {
		return false, fmt.Errorf("store: claim card: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ExpireCard marks a pending card expired; false when it was not pending.
func ExpireCard(ctx context.Context, q Querier, id string) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE cards SET state = 'expired' WHERE id = $1 AND state = 'pending'`, id)
	if err != nil {
		return false, fmt.Errorf("store: expire card: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// SettleCardsOfRun takes the cards that asked for run runID of the
// session once its question is resolved (by a tap, which claimed its own
// card already, or by a typed answer): pending ones are claimed for
// action. It returns the ids of the cards whose outcome is now to be
// shown; an expired card showed its own.
func SettleCardsOfRun(ctx context.Context, q Querier, sessionID int64, runID, action string, now time.Time) ([]string, error) {
	rows, err := q.Query(ctx, `UPDATE cards
SET state = 'claimed', action = CASE WHEN state = 'pending' THEN $3 ELSE action END, claimed_at = COALESCE(claimed_at, $4)
WHERE session_id = $1 AND run_id = $2 AND state IN ('pending', 'claimed') RETURNING id`, sessionID, runID, action, now)
	if err != nil {
		return nil, fmt.Errorf("store: settle cards of run: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: settle cards of run: %w", err)
	}
	return ids, nil
}

// SetCardMessage records the platform's id of a card once sent.
func SetCardMessage(ctx context.Context, q Querier, id, messageID string) error {
	if _, err := q.Exec(ctx, `UPDATE cards SET message_id = $2 WHERE id = $1`, id, messageID); err != nil {
		return fmt.Errorf("store: set card message: %w", err)
	}
	return nil
}

// CardTaps counts, per channel and account, the cards sent since since
// that asked a question and how it was answered: by a tap, or otherwise
// (typed, or let expire). An answer's rating buttons are left out: most
// answers are never rated, and a rating makes no message to count. Many cards answered and none tapped says the platform
// does not deliver taps (`hermes doctor`).
type CardTaps struct {
	Channel, Account string
	Sent, Tapped     int
	Answered         int // claimed or expired, by any means
}

// CountCardTaps reads CardTaps for every account that sent a card since since.
func CountCardTaps(ctx context.Context, q Querier, since time.Time) ([]CardTaps, error) {
	rows, err := q.Query(ctx, `
SELECT c.channel, c.account, count(*),
       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM inbound_messages m
           WHERE m.channel = c.channel AND m.account = c.account AND m.platform_msg_id = 'card:' || c.id)),
       count(*) FILTER (WHERE c.state <> 'pending' OR c.expires_at < now())
FROM cards c WHERE c.message_id <> '' AND c.created_at >= $1 AND c.kind <> $2
GROUP BY c.channel, c.account ORDER BY c.channel, c.account`, since, CardRate)
	if err != nil {
		return nil, fmt.Errorf("store: count card taps: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CardTaps, error) {
		var t CardTaps
		err := row.Scan(&t.Channel, &t.Account, &t.Sent, &t.Tapped, &t.Answered)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: count card taps: %w", err)
	}
	return out, nil
}
