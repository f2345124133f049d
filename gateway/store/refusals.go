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
// check, at now: in the running totals and in now's minute, one
// statement.
func RecordRefusal(ctx context.Context, q Querier, channel, account, check string, now time.Time) error {
	if _, err := q.Exec(ctx, `
WITH minute AS (
    INSERT INTO callback_refusal_minutes (channel, account, "check", minute, count) VALUES ($1, $2, $3, date_trunc('minute', $4::timestamptz), 1)
    ON CONFLICT (channel, account, "check", minute) DO UPDATE SET count = callback_refusal_minutes.count + 1)
INSERT INTO callback_refusals (channel, account, "check", count, last_at) VALUES ($1, $2, $3, 1, $4)
ON CONFLICT (channel, account, "check") DO UPDATE SET count = callback_refusals.count + 1,
    last_at = greatest(callback_refusals.last_at, excluded.last_at)`, channel, account, check, now); err != nil {
		return fmt.Errorf("store: record refusal: %w", err)
	}
	return nil
}

// RefusalHistory is how long the refusals per minute are kept: the
// console's longest period and some.
const RefusalHistory = 35 * 24 * time.Hour

// ForgetRefusalMinutes deletes the refusals per minute older than
// RefusalHistory before now.
func ForgetRefusalMinutes(ctx context.Context, q Querier, now time.Time) error {
	if _, err := q.Exec(ctx, `DELETE FROM callback_refusal_minutes WHERE minute < $1`, now.Add(-RefusalHistory)); err != nil {
		return fmt.Errorf("store: forget refusal minutes: %w", err)
	}
	return nil
}

// RefusalPoint is the callbacks of one account refused in one bucket.
type RefusalPoint struct {
	At               time.Time
	Channel, Account string
	Refused          int
}

// RefusalChart counts the refused callbacks per account and bucket.
func RefusalChart(ctx context.Context, q Querier, r ChartRange) ([]RefusalPoint, error) {
	return collectChart[RefusalPoint](ctx, q, "refusals", `
SELECT date_bin($3, minute, $1), channel, account, sum(count)::int
FROM callback_refusal_minutes WHERE minute >= $1 AND minute < $2 /*account*/
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, r, ownAccount)
}

// RefusalChart is the package function over the console's pool.
func (c *Console) RefusalChart(ctx context.Context, r ChartRange) ([]RefusalPoint, error) {
	return RefusalChart(ctx, c.pool, r)
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
