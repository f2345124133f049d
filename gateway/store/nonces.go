package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ClaimNonce claims channel/account's single-use nonce for msgID until
// expires, in tx, so the claim commits (or rolls back) with what the
// caller stores for the message. claimed is true when this call took it
// (a first use, or a claim that had expired by now); otherwise heldBy is
// the message id that holds it: msgID itself for the same delivery again,
// another id for a replay.
//
// Two transactions claiming the same nonce at once are serialised by its
// primary key: the second waits for the first to commit, then sees its
// claim (or takes the nonce if the first rolled back).
func ClaimNonce(ctx context.Context, tx Querier, channel, account, nonce, msgID string, expires, now time.Time) (claimed bool, heldBy string, err error) {
	err = tx.QueryRow(ctx, `
INSERT INTO callback_nonces AS n (channel, account, nonce, platform_msg_id, expires_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (channel, account, nonce) DO UPDATE SET platform_msg_id = excluded.platform_msg_id, expires_at = excluded.expires_at
    WHERE n.expires_at <= $6
RETURNING true`, channel, account, nonce, msgID, expires, now).Scan(&claimed)
	if err == nil {
		return true, msgID, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, "", fmt.Errorf("store: claim nonce: %w", err)
	}
	// A live claim exists; ON CONFLICT locked its row, so it stays as read.
	err = tx.QueryRow(ctx, `SELECT platform_msg_id FROM callback_nonces WHERE channel = $1 AND account = $2 AND nonce = $3`,
		channel, account, nonce).Scan(&heldBy)
	if err != nil {
		return false, "", fmt.Errorf("store: claim nonce: %w", err)
	}
	return false, heldBy, nil
}

// ForgetNonces deletes the claims that expired by now and returns how
// many. There are at most as many as one timestamp window's signed
// callbacks, so one statement deletes them all.
func ForgetNonces(ctx context.Context, q Querier, now time.Time) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM callback_nonces WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, fmt.Errorf("store: forget nonces: %w", err)
	}
	return tag.RowsAffected(), nil
}
