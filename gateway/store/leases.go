package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AcquireLease takes the lease name for holder until now+ttl, or renews it
// when holder has it. ok is false while another holder's lease runs.
func AcquireLease(ctx context.Context, q Querier, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	var got string
	err := q.QueryRow(ctx, `
INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
WHERE leases.holder = EXCLUDED.holder OR leases.expires_at <= $4
RETURNING holder`, name, holder, now.Add(ttl), now).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: lease %s: %w", name, err)
	}
	return true, nil
}

// ReleaseLease gives up holder's lease name (if it still has it).
func ReleaseLease(ctx context.Context, q Querier, name, holder string) error {
	if _, err := q.Exec(ctx, `DELETE FROM leases WHERE name = $1 AND holder = $2`, name, holder); err != nil {
		return fmt.Errorf("store: release lease %s: %w", name, err)
	}
	return nil
}

// lockID is the advisory lock id of name, for TryLock and the
// transaction-scoped locks taken on the same names.
func lockID(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// Lock is an exclusive hold on a name across all replicas: a Postgres
// advisory lock on a dedicated connection.
type Lock struct {
	conn *pgxpool.Conn
	id   int64
}

// TryLock takes the advisory lock of name on a dedicated connection. ok is
// false when another holder has it. The lock dies with the connection, so
// a crashed process never leaves it held.
func TryLock(ctx context.Context, pool *pgxpool.Pool, name string) (lock *Lock, ok bool, err error) {
	return TryLockFound(ctx, pool, func(Querier) (string, error) { return name, nil })
}

// TryLockFound is TryLock of the name that find looks up on the
// connection that then takes the lock: under load every pool acquisition
// waits behind the others', and a lookup on a connection of its own waited
// twice.
func TryLockFound(ctx context.Context, pool *pgxpool.Pool, find func(Querier) (string, error)) (lock *Lock, ok bool, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("store: lock: %w", err)
	}
	name, err := find(conn)
	if err != nil {
		conn.Release()
		return nil, false, err
	}
	id := lockID(name)
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, id).Scan(&ok); err != nil || !ok {
		conn.Release()
		if err != nil {
			return nil, false, fmt.Errorf("store: lock %s: %w", name, err)
		}
		return nil, false, nil
	}
	return &Lock{conn: conn, id: id}, true, nil
}

// TryLockUndelivered takes the delivery lock of reply replyKey's
// conversation, as TryLock does, and reads its parts UndeliveredInOrder
// reads, in one round trip and one transaction (issue 39: they were
// three). The read is a statement of its own, after the lock's, and
// locks the parts it reads: the lock's last holder records its last
// delivery in the transaction that releases the lock (UnlockDelivered),
// and a session's advisory lock is free before that transaction commits,
// so the read waits for that update and reads the part as delivered
// rather than send it again. The parts' row locks end with this
// transaction. orderKey is the conversation if the caller knows it; ""
// looks it up first, on the same connection. parts is nil when the lock
// is held elsewhere.
func TryLockUndelivered(ctx context.Context, pool *pgxpool.Pool, replyKey, orderKey string) (lock *Lock, parts []OutboxPart, ok bool, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: lock: %w", err)
	}
	if orderKey == "" {
		if orderKey, err = OrderKeyOf(ctx, conn, replyKey); err != nil {
			conn.Release()
			return nil, nil, false, err
		}
	}
	name := "deliver:" + orderKey
	if orderKey == "" { // a reply written before order keys
		name = "deliver-reply:" + replyKey
	}
	id := lockID(name)
	var b pgx.Batch
	b.Queue(`SELECT pg_try_advisory_lock($1)`, id)
	sql, key := undeliveredQuery(orderKey, replyKey, true)
	b.Queue(sql, key)
	br := conn.SendBatch(ctx, &b)
	err = br.QueryRow().Scan(&ok)
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			parts, err = collectParts(rows)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	lock = &Lock{conn: conn, id: id}
	switch {
	case err != nil && ok:
		lock.Unlock(ctx)
		return nil, nil, false, fmt.Errorf("store: lock %s: %w", name, err)
	case err != nil:
		conn.Release()
		return nil, nil, false, fmt.Errorf("store: lock %s: %w", name, err)
	case !ok:
		conn.Release()
		return nil, nil, false, nil
	}
	return lock, parts, true, nil
}

// Conn is the connection holding the lock.
func (l *Lock) Conn() *pgxpool.Conn { return l.conn }

// Unlock releases the lock.
func (l *Lock) Unlock(ctx context.Context) {
	if _, err := l.conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, l.id); err != nil {
		// The lock is tied to the session; make sure it dies with it.
		l.conn.Conn().Close(context.WithoutCancel(ctx)) //nolint:errcheck
	}
	l.conn.Release()
}

// UnlockDelivered records part id delivered (MarkDelivered) and releases
// the lock, in one statement and one transaction: the last write of a
// delivery and its unlock were two (issue 39). On an error the lock dies
// with its connection and the part stays undelivered, to be sent again.
func (l *Lock) UnlockDelivered(ctx context.Context, id int64, platformMsgID string, at time.Time) error {
	ctx = context.WithoutCancel(ctx)
	// One statement: the unlock reads the update's count, so it runs once
	// the part's row is written (and locked until the commit): the next
	// holder's read FOR UPDATE waits for this record.
	_, err := l.conn.Exec(ctx, `WITH d AS (`+markDelivered+` RETURNING 1)
SELECT pg_advisory_unlock($4) FROM (SELECT count(*) FROM d) AS written`, id, at, platformMsgID, l.id)
	if err != nil {
		l.conn.Conn().Close(ctx) //nolint:errcheck // the lock dies with the session
	}
	l.conn.Release()
	if err != nil {
		return fmt.Errorf("store: mark delivered: %w", err)
	}
	return nil
}

// KeptConn is the connection of a loop that must not wait its turn in
// the pool: the session leases' upkeep. Under load the runs and callbacks
// can hold every pooled connection for longer than a lease, and a renewal
// waiting behind them let a live run's lease lapse. It is a connection of
// its own beside the pool (counted in ReservedConns), dialed when kept and
// again after a failure; a pool being closed does not wait for it.
type KeptConn struct {
	cfg  *pgx.ConnConfig
	conn *pgx.Conn
}

// keptDialTimeout bounds one attempt to open the kept connection; the
// loop tries again at its next tick.
const keptDialTimeout = 5 * time.Second

// Keep returns a KeptConn with pool's settings, connected already unless
// that fails (the next Get tries again); Release closes it. Connecting at
// once matters: dialed at the loop's first tick, a third of a lease after
// start, it could find Postgres out of connections by then.
func Keep(ctx context.Context, pool *pgxpool.Pool) *KeptConn {
	k := &KeptConn{cfg: pool.Config().ConnConfig}
	k.Get(ctx) //nolint:errcheck // best effort; Get reports it when used
	return k
}

// Get is the kept connection, dialed if there is none.
func (k *KeptConn) Get(ctx context.Context) (*pgx.Conn, error) {
	if k.conn == nil {
		dial, cancel := context.WithTimeout(ctx, keptDialTimeout)
		defer cancel()
		c, err := pgx.ConnectConfig(dial, k.cfg.Copy())
		if err != nil {
			return nil, fmt.Errorf("store: kept connection: %w", err)
		}
		k.conn = c
	}
	return k.conn, nil
}

// Release closes the connection: for good, or after an error (the next
// Get dials another).
func (k *KeptConn) Release() {
	if k.conn != nil {
		k.conn.Close(context.Background()) //nolint:errcheck // closing is best effort
		k.conn = nil
	}
}
