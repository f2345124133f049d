package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Scopes of console login counters (table login_throttle).
const (
	LoginScopeAccount = "account" // one username, from any address
	LoginScopeAddr    = "addr"    // one client address, any username
	LoginScopePair    = "pair"    // one address on one username
)

// LoginKey names one login counter.
type LoginKey struct {
	Scope string // a LoginScope constant
	Key   string
}

// LoginCounter is a counter as an attempt found it.
type LoginCounter struct {
	LoginKey
	Failures    int       // attempts counted since the counter was cleared or forgotten
	LastFailure time.Time // zero: none
	LastSuccess time.Time // zero: none; set on pair counters only
}

// loginCleanupBatch bounds the idle counters one attempt deletes.
const loginCleanupBatch = 100

// BeginLoginAttempt counts a login attempt on keys before its password is
// checked, so that parallel attempts are counted as they arrive. In one
// transaction it locks the counters (creating missing ones; every replica's
// attempts on a key wait their turn), forgets those whose last failure is
// before forget, and calls wait with them in the order of keys. When wait
// returns zero the attempt is counted as a failure on every key at now and
// committed; a successful login takes it back with LoginSucceeded. When
// wait returns more, nothing changes and the duration is returned.
func BeginLoginAttempt(ctx context.Context, db Beginner, keys []LoginKey, now, forget time.Time,
	wait func([]LoginCounter) time.Duration) (time.Duration, error) {
	scopes, names := sortedLoginKeys(keys)
	var d time.Duration
	err := InTx(ctx, db, func(tx pgx.Tx) error {
		// Rows are locked in (scope, key) order, the same in every
		// transaction, so two attempts never wait on each other in a cycle.
		rows, err := tx.Query(ctx, `
INSERT INTO login_throttle (scope, key)
SELECT scope, key FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(scope, key, n) ORDER BY n
ON CONFLICT (scope, key) DO UPDATE SET
    failures = CASE WHEN login_throttle.last_failure < $3 THEN 0 ELSE login_throttle.failures END
RETURNING scope, key, failures, last_failure, last_success`,
			scopes, names, forget)
		if err != nil {
			return fmt.Errorf("store: login attempt: %w", err)
		}
		found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LoginCounter, error) {
			var c LoginCounter
			var failed, succeeded *time.Time
			err := row.Scan(&c.Scope, &c.Key, &c.Failures, &failed, &succeeded)
			if failed != nil {
				c.LastFailure = *failed
			}
			if succeeded != nil {
				c.LastSuccess = *succeeded
			}
			return c, err
		})
		if err != nil {
			return fmt.Errorf("store: login attempt: %w", err)
		}
		counters := make([]LoginCounter, len(keys))
		for i, k := range keys {
			j := slices.IndexFunc(found, func(c LoginCounter) bool { return c.LoginKey == k })
			if j < 0 {
				return fmt.Errorf("store: login attempt: counter %s %q not returned", k.Scope, k.Key)
			}
			counters[i] = found[j]
		}
		if d = wait(counters); d > 0 {
			return errLoginWait // roll back: a refused attempt changes nothing
		}
		// Attempts take their time before they queue on the locks, so they
		// are counted out of time order: the last failure is the newest
		// time counted, never an earlier one counted late (the next delay
		// would run from it and end early).
		if _, err := tx.Exec(ctx, `
UPDATE login_throttle SET failures = failures + 1, last_failure = greatest(last_failure, $3)
WHERE (scope, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, scopes, names, now); err != nil {
			return fmt.Errorf("store: login attempt: %w", err)
		}
		return nil
	})
	if d > 0 {
		return d, nil
	}
	return 0, err
}

// errLoginWait rolls back a refused attempt's transaction.
var errLoginWait = errors.New("store: login attempt must wait")

// LoginSucceeded takes back the attempt BeginLoginAttempt counted on keys,
// and clears the counter clear (one of keys), remembering now as its last
// success.
func LoginSucceeded(ctx context.Context, db Beginner, keys []LoginKey, clear LoginKey, now time.Time) error {
	scopes, names := sortedLoginKeys(keys)
	return InTx(ctx, db, func(tx pgx.Tx) error {
		// The same lock order as BeginLoginAttempt.
		if _, err := tx.Exec(ctx, `
SELECT 1 FROM login_throttle WHERE (scope, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
ORDER BY scope, key FOR UPDATE`, scopes, names); err != nil {
			return fmt.Errorf("store: login succeeded: %w", err)
		}
		if _, err := tx.Exec(ctx, `
UPDATE login_throttle SET
    failures = CASE WHEN scope = $3 AND key = $4 THEN 0 ELSE greatest(failures - 1, 0) END,
    last_success = CASE WHEN scope = $3 AND key = $4 THEN $5 ELSE last_success END
WHERE (scope, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, scopes, names, clear.Scope, clear.Key, now); err != nil {
			return fmt.Errorf("store: login succeeded: %w", err)
		}
		return nil
	})
}

// ForgetLoginCounters deletes up to a batch of counters whose last failure
// is before failedBefore and that have no success since succeededBefore.
// Counters in use are skipped, not waited for.
func ForgetLoginCounters(ctx context.Context, q Querier, failedBefore, succeededBefore time.Time) error {
	if _, err := q.Exec(ctx, `
DELETE FROM login_throttle WHERE (scope, key) IN (
    SELECT scope, key FROM login_throttle
    WHERE last_failure < $1 AND (last_success IS NULL OR last_success < $2)
    LIMIT $3 FOR UPDATE SKIP LOCKED)`, failedBefore, succeededBefore, loginCleanupBatch); err != nil {
		return fmt.Errorf("store: forget login counters: %w", err)
	}
	return nil
}

// sortedLoginKeys are keys in lock order, as two arrays for unnest.
func sortedLoginKeys(keys []LoginKey) (scopes, names []string) {
	sorted := slices.SortedFunc(slices.Values(keys), func(a, b LoginKey) int {
		return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Key, b.Key))
	})
	for _, k := range sorted {
		scopes, names = append(scopes, k.Scope), append(names, k.Key)
	}
	return scopes, names
}
