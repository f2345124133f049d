package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Refusal is the newest refused callback of an account: which check it
// failed, when, and how many the account has had for that check.
type Refusal struct {
	Check string
	Count int64
	At    time.Time
}

// RecordRefusal counts a refused callback of channel/account that failed
// check, at now.
func RecordRefusal(ctx context.Context, q Querier, channel, account, check string, now time.Time) error {
	if _, err := q.Exec(ctx, `
INSERT INTO callback_refusals (channel, account, "check", count, last_at) VALUES ($1, $2, $3, 1, $4)
ON CONFLICT (channel, account, "check") DO UPDATE SET count = callback_refusals.count + 1,
    last_at = greatest(callback_refusals.last_at, excluded.last_at)`, channel, account, check, now); err != nil {
		return fmt.Errorf("store: record refusal: %w", err)
	}
	return nil
}

// LastRefusal returns the newest refusal of channel/account; found is false
// when it has none.
func LastRefusal(ctx context.Context, q Querier, channel, account string) (r Refusal, found bool, err error) {
	err = q.QueryRow(ctx, `
SELECT "check", count, last_at FROM callback_refusals WHERE channel = $1 AND account = $2
ORDER BY last_at DESC LIMIT 1`, channel, account).Scan(&r.Check, &r.Count, &r.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return Refusal{}, false, nil
	}
	if err != nil {
		return Refusal{}, false, fmt.Errorf("store: last refusal: %w", err)
	}
	return r, true, nil
}

// AccountRefusal is the newest refusal of one account.
type AccountRefusal struct {
	Channel, Account string
	Refusal
}

// LastRefusals returns the newest refusal of every account that has had
// one, by channel and account.
func LastRefusals(ctx context.Context, q Querier) ([]AccountRefusal, error) {
	rows, err := q.Query(ctx, `
SELECT DISTINCT ON (channel, account) channel, account, "check", count, last_at
FROM callback_refusals ORDER BY channel, account, last_at DESC`)
	if err != nil {
		return nil, fmt.Errorf("store: last refusals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AccountRefusal, error) {
		var r AccountRefusal
		err := row.Scan(&r.Channel, &r.Account, &r.Check, &r.Count, &r.At)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: last refusals: %w", err)
	}
	return out, nil
}

// EverReceived reports whether channel/account has stored any message: an
// account with neither a message nor a refusal has never had a callback
// reach Hermes (a callback URL not saved, or pointing elsewhere).
func EverReceived(ctx context.Context, q Querier, channel, account string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM inbound_messages WHERE channel = $1 AND account = $2)`,
		channel, account).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("store: ever received: %w", err)
	}
	return ok, nil
}
