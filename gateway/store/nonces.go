package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// NonceClaim is one message's single-use nonce, claimed by ClaimNonces.
type NonceClaim struct {
	Channel, Account, Nonce string
	MsgID                   string // the message the nonce proves
	Expires                 time.Time
}

// NonceOutcome is what ClaimNonces found for one claim. Claimed is true
// when the call took the nonce (a first use, or a claim that had expired
// by now); otherwise HeldBy is the message id that holds it: the claim's
// own MsgID for the same delivery again, another id for a replay.
type NonceOutcome struct {
	Claimed bool
	HeldBy  string
}

type nonceKey struct{ channel, account, nonce string }

func (c NonceClaim) key() nonceKey { return nonceKey{c.Channel, c.Account, c.Nonce} }

// ClaimNonces claims the nonces of claims in tx, so each claim commits (or
// rolls back) with what the caller stores for its message, and returns
// each claim's outcome in order. A batch of acks claims all its nonces in
// one statement, and looks up holders in a second only when some nonce
// was held (a platform's retry, or a replay).
//
// Two transactions claiming the same nonce at once are serialised by its
// primary key: the second waits for the first to commit, then sees its
// claim (or takes the nonce if the first rolled back). The rows are
// claimed in key order, so two batches never wait on each other in a
// cycle. The same nonce twice in claims is decided as if claimed one
// after the other: the later sees the earlier's claim. No claims cost no
// statement.
func ClaimNonces(ctx context.Context, tx Querier, claims []NonceClaim, now time.Time) ([]NonceOutcome, error) {
	if len(claims) == 0 {
		return nil, nil
	}
	first := make(map[nonceKey]int, len(claims)) // the index of each key's first claim
	var order []int                              // those indexes, in key order
	for i, c := range claims {
		if _, seen := first[c.key()]; !seen {
			first[c.key()] = i
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmpKeys(claims[a].key(), claims[b].key()) })
	channel, account, nonce, msgID := make([]string, len(order)), make([]string, len(order)), make([]string, len(order)), make([]string, len(order))
	expires := make([]time.Time, len(order))
	for j, i := range order {
		c := claims[i]
		channel[j], account[j], nonce[j], msgID[j], expires[j] = c.Channel, c.Account, c.Nonce, c.MsgID, c.Expires
	}
	rows, err := tx.Query(ctx, `
INSERT INTO callback_nonces AS n (channel, account, nonce, platform_msg_id, expires_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
ON CONFLICT (channel, account, nonce) DO UPDATE SET platform_msg_id = excluded.platform_msg_id, expires_at = excluded.expires_at
    WHERE n.expires_at <= $6
RETURNING n.channel, n.account, n.nonce`, channel, account, nonce, msgID, expires, now)
	if err != nil {
		return nil, fmt.Errorf("store: claim nonces: %w", err)
	}
	claimed := make(map[nonceKey]bool, len(order))
	for rows.Next() {
		var k nonceKey
		if err := rows.Scan(&k.channel, &k.account, &k.nonce); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: claim nonces: %w", err)
		}
		claimed[k] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: claim nonces: %w", err)
	}
	held, err := nonceHolders(ctx, tx, claims, order, claimed)
	if err != nil {
		return nil, err
	}
	out := make([]NonceOutcome, len(claims))
	for i, c := range claims {
		switch k := c.key(); {
		case claimed[k] && first[k] == i:
			out[i] = NonceOutcome{Claimed: true, HeldBy: c.MsgID}
		case claimed[k]: // by this batch's first claim of it
			out[i] = NonceOutcome{HeldBy: claims[first[k]].MsgID}
		default:
			out[i] = NonceOutcome{HeldBy: held[k]}
		}
	}
	return out, nil
}

// nonceHolders reads who holds the nonces of order that the insert did not
// claim: live claims, locked by ON CONFLICT, so they stay as read.
func nonceHolders(ctx context.Context, tx Querier, claims []NonceClaim, order []int, claimed map[nonceKey]bool) (map[nonceKey]string, error) {
	var channel, account, nonce []string
	for _, i := range order {
		if c := claims[i]; !claimed[c.key()] {
			channel, account, nonce = append(channel, c.Channel), append(account, c.Account), append(nonce, c.Nonce)
		}
	}
	if len(nonce) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `
SELECT n.channel, n.account, n.nonce, n.platform_msg_id
FROM unnest($1::text[], $2::text[], $3::text[]) AS k(channel, account, nonce)
JOIN callback_nonces n USING (channel, account, nonce)`, channel, account, nonce)
	if err != nil {
		return nil, fmt.Errorf("store: claim nonces: %w", err)
	}
	defer rows.Close()
	held := make(map[nonceKey]string, len(nonce))
	for rows.Next() {
		var k nonceKey
		var msgID string
		if err := rows.Scan(&k.channel, &k.account, &k.nonce, &msgID); err != nil {
			return nil, fmt.Errorf("store: claim nonces: %w", err)
		}
		held[k] = msgID
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: claim nonces: %w", err)
	}
	if len(held) != len(nonce) {
		return nil, fmt.Errorf("store: claim nonces: %d of %d held nonces not found", len(nonce)-len(held), len(nonce))
	}
	return held, nil
}

func cmpKeys(a, b nonceKey) int {
	if c := strings.Compare(a.channel, b.channel); c != 0 {
		return c
	}
	if c := strings.Compare(a.account, b.account); c != 0 {
		return c
	}
	return strings.Compare(a.nonce, b.nonce)
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
