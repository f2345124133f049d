package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// PaceLimit is one rate limit a send must fit: at most Max sends under Key
// in any Window (a sliding window, not a bucket that refills).
type PaceLimit struct {
	Key    string // what the limit counts: a chat, an account
	Max    int    // sends allowed in any Window; > 0
	Window time.Duration
}

// paceLockClass is the first key of the advisory locks that serialise the
// claims of one limit key ("pace" in ASCII); the two-key form of advisory
// locks never collides with the one-key form TryLock uses.
const paceLockClass int32 = 0x70616365

// claimSQL checks every limit and records the send under each only if all
// have room, in one statement. A limit is full when its Max-th newest send
// is still inside the window ([now - window, now], both ends counted); it
// frees a microsecond after that send leaves it. The caller holds the
// keys' locks, and the statement's snapshot is taken after it got them, so
// it sees every claim committed before.
const claimSQL = `
WITH lim AS (
    SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[]) AS l(key, max, window_us)
), busy AS (
    SELECT x.sent_at + (l.window_us + 1) * interval '1 microsecond' AS free_at
    FROM lim l CROSS JOIN LATERAL (
        SELECT s.sent_at FROM pace_sends s
        WHERE s.key = l.key AND s.sent_at >= $4::timestamptz - l.window_us * interval '1 microsecond'
        ORDER BY s.sent_at DESC OFFSET l.max - 1 LIMIT 1) x
), ins AS (
    INSERT INTO pace_sends (key, sent_at)
    SELECT key, $4 FROM lim WHERE NOT EXISTS (SELECT 1 FROM busy)
    RETURNING id
)
SELECT (SELECT max(free_at) FROM busy), ARRAY(SELECT id FROM ins)`

// claimLockSQL takes a claim's locks ($2, in the class $1) and sets its
// transaction up, in one statement (issue 39: a statement less per send):
//   - A claim need not survive a crash of Postgres itself (the window
//     would forget a fraction of a second of sends), so its commit does
//     not wait for the disk: that wait was most of its cost
//     (AsyncCommitSQL's setting).
//   - The claim's statement is planned once per connection, not at every
//     call: Postgres kept planning it anew (a custom plan looks cheaper
//     when it sees the arrays' lengths), 0.17 ms of CPU per send, more
//     than running it. Its plan cannot use the values anyway (the keys
//     come from the arrays), and the generic plan, even one made on an
//     empty table, finds the keys' sends by pace_sends_key_idx.
const claimLockSQL = `SELECT set_config('synchronous_commit', 'off', true),
       set_config('plan_cache_mode', 'force_generic_plan', true), pg_advisory_xact_lock($1, k)
FROM unnest($2::int4[]) AS k`

// Batcher sends a batch of statements in one round trip: a
// *pgxpool.Pool or *pgxpool.Conn.
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// PaceClaim is a send recorded against its limits.
type PaceClaim struct {
	ids []int64
}

// ClaimSend records a send at now under every limit, atomically across
// replicas: either each limit had room and the send counts against all of
// them, or none is touched and retryAt is the earliest time all could have
// room (assuming nothing else is sent meanwhile). No limits: a claim at once.
// db is a connection or a pool, not a transaction: the claim is a
// transaction of its own, one round trip (typically on the connection
// holding a conversation's delivery lock).
func ClaimSend(ctx context.Context, db Batcher, limits []PaceLimit, now time.Time) (claim PaceClaim, retryAt time.Time, err error) {
	if len(limits) == 0 {
		return PaceClaim{}, time.Time{}, nil
	}
	keys := make([]string, len(limits))
	maxes := make([]int32, len(limits))
	windows := make([]int64, len(limits))
	locks := make([]int32, 0, len(limits))
	for i, l := range limits {
		if l.Max <= 0 || l.Window <= 0 {
			return PaceClaim{}, time.Time{}, fmt.Errorf("store: pace %q: limit %d per %s is not positive", l.Key, l.Max, l.Window)
		}
		keys[i], maxes[i], windows[i] = l.Key, int32(l.Max), l.Window.Microseconds()
		locks = append(locks, lockHash(l.Key))
	}
	// Every claim takes its keys' locks in ascending order, so two claims
	// sharing keys (two chats of one account) queue rather than deadlock.
	slices.Sort(locks)
	locks = slices.Compact(locks)
	now = now.Truncate(time.Microsecond) // what Postgres stores
	// One round trip, one transaction: the statements of a batch run in
	// order in one implicit transaction, so the claim starts (and takes
	// its snapshot) only once the locks are held, and they are released
	// when it commits.
	var b pgx.Batch
	b.Queue(claimLockSQL, paceLockClass, locks)
	var free *time.Time
	b.Queue(claimSQL, keys, maxes, windows, now).QueryRow(func(row pgx.Row) error {
		return row.Scan(&free, &claim.ids)
	})
	if err := db.SendBatch(ctx, &b).Close(); err != nil {
		return PaceClaim{}, time.Time{}, fmt.Errorf("store: pace claim: %w", err)
	}
	if free != nil {
		return PaceClaim{}, *free, nil
	}
	return claim, time.Time{}, nil
}

// claimUnitsSQL records $3 units under one key only if the window has
// room for all of them: fewer than max-n+1 ($2 - $3 + 1) units in it, that
// is no (max-n+1)-th newest. Same locking and window rule as claimSQL.
const claimUnitsSQL = `
WITH busy AS (
    SELECT s.sent_at + ($5::bigint + 1) * interval '1 microsecond' AS free_at
    FROM pace_sends s
    WHERE s.key = $1 AND s.sent_at >= $4::timestamptz - $5::bigint * interval '1 microsecond'
    ORDER BY s.sent_at DESC OFFSET $2::int - $3::int LIMIT 1
), ins AS (
    INSERT INTO pace_sends (key, sent_at)
    SELECT $1, $4 FROM generate_series(1, $3::int) WHERE NOT EXISTS (SELECT 1 FROM busy)
    RETURNING id
)
SELECT (SELECT free_at FROM busy), ARRAY(SELECT id FROM ins ORDER BY id)`

// ClaimUnits records n units (1 <= n <= l.Max) under l at now, atomically
// across replicas: either the window had room for all n and they count,
// or none is recorded and retryAt is when room for them is certain. Like
// ClaimSend it is one round trip and a transaction of its own, on the
// same table and locks (a key of its own kind, e.g. "intake:...").
func ClaimUnits(ctx context.Context, db Batcher, l PaceLimit, n int, now time.Time) (claim PaceClaim, retryAt time.Time, err error) {
	if l.Max <= 0 || l.Window <= 0 || n < 1 || n > l.Max {
		return PaceClaim{}, time.Time{}, fmt.Errorf("store: pace %q: %d units against a limit of %d per %s", l.Key, n, l.Max, l.Window)
	}
	now = now.Truncate(time.Microsecond)
	var b pgx.Batch
	b.Queue(claimLockSQL, paceLockClass, []int32{lockHash(l.Key)})
	var free *time.Time
	b.Queue(claimUnitsSQL, l.Key, l.Max, n, now, l.Window.Microseconds()).QueryRow(func(row pgx.Row) error {
		return row.Scan(&free, &claim.ids)
	})
	if err := db.SendBatch(ctx, &b).Close(); err != nil {
		return PaceClaim{}, time.Time{}, fmt.Errorf("store: pace claim: %w", err)
	}
	if free != nil {
		return PaceClaim{}, *free, nil
	}
	return claim, time.Time{}, nil
}

// After is the part of a claim of units past its first n: what to release
// when only n of them were used.
func (c PaceClaim) After(n int) PaceClaim {
	if n >= len(c.ids) {
		return PaceClaim{}
	}
	return PaceClaim{ids: c.ids[max(n, 0):]}
}

// ReleaseSend takes back a claim whose send did not happen (the channel
// deferred it), so it does not count against the limits.
func ReleaseSend(ctx context.Context, q Querier, claim PaceClaim) error {
	if len(claim.ids) == 0 {
		return nil
	}
	if _, err := q.Exec(ctx, `DELETE FROM pace_sends WHERE id = ANY($1)`, claim.ids); err != nil {
		return fmt.Errorf("store: pace release: %w", err)
	}
	return nil
}

// SweepSends deletes the sends recorded before before, which no window
// reaches any more, and reports how many.
func SweepSends(ctx context.Context, q Querier, before time.Time) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM pace_sends WHERE sent_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("store: pace sweep: %w", err)
	}
	return tag.RowsAffected(), nil
}

// lockHash is key's advisory lock. Two keys with one hash only share a
// lock: their claims queue, still correct.
func lockHash(key string) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32())
}
