package privacy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/store"
)

// A pass of the retention job: every table in batches, each batch its own
// short transaction, so the pipeline's statements never wait long behind
// it; a pass stops after passBudget and the next one goes on.
const passBudget = time.Minute

// deletions are the tables whose rows are only content: rows past the
// cutoff are deleted, oldest first. Each query takes the cutoff ($1) and
// the batch size ($2) and deletes at most one batch; the ordered scans
// read no row twice, since what they passed is gone.
var deletions = []struct{ table, sql string }{
	{"messages", `DELETE FROM messages WHERE id IN (
  SELECT id FROM messages WHERE created_at < $1 ORDER BY created_at LIMIT $2)`},
	// The outbox has no index on created_at (writing one on every reply
	// would cost more than this job saves): its ids grow with time, so
	// the oldest rows are read by id and the batch is cut at the first
	// newer one.
	{"outbox", `WITH first AS (SELECT id, created_at FROM outbox ORDER BY id LIMIT $2),
  due AS (SELECT id FROM first WHERE id < coalesce((SELECT min(id) FROM first WHERE created_at >= $1), 'infinity'::numeric))
DELETE FROM outbox WHERE id IN (SELECT id FROM due)`},
	{"reply_drafts", `DELETE FROM reply_drafts WHERE inbound_id IN (
  SELECT inbound_id FROM reply_drafts WHERE updated_at < $1 LIMIT $2)`},
	{"observation_archive", `DELETE FROM observation_archive WHERE (run_id, ref) IN (
  SELECT run_id, ref FROM observation_archive WHERE created_at < $1 LIMIT $2)`},
	// Attachments' bytes go at media.retention; their names and what they
	// became go here (a skill's file URLs with them).
	{"inbound_media", `DELETE FROM inbound_media WHERE (inbound_id, part) IN (
  SELECT inbound_id, part FROM inbound_media WHERE fetched_at < $1 ORDER BY fetched_at LIMIT $2)`},
	{"session_pending", `DELETE FROM session_pending WHERE session_id IN (
  SELECT session_id FROM session_pending WHERE expires_at < $1 LIMIT $2)`},
	// A card's body is a reply, its buttons may be a skill's answer, and
	// it names its asker; long expired by then.
	{"cards", `DELETE FROM cards WHERE id IN (
  SELECT id FROM cards WHERE created_at < $1 ORDER BY created_at LIMIT $2)`},
	// The knowledge base's unanswered questions are employees' texts.
	{"knowledge_gaps", `DELETE FROM knowledge_gaps WHERE inbound_id IN (
  SELECT inbound_id FROM knowledge_gaps WHERE asked_at < $1 ORDER BY asked_at LIMIT $2)`},
}

// DB is a pool: statements on their own, and transactions.
type DB interface {
	store.Querier
	store.Beginner
}

// Retention erases message content that arrived before cutoff: it deletes
// the rows that are only content (deletions) and empties the content of
// inbound messages and runs, whose rows stay for the console's counts,
// walking them from where the last pass stopped (retention_marks). It
// returns how many rows it changed; it stops early, to go on at its next
// pass, when ctx ends or after passBudget.
func Retention(ctx context.Context, db DB, cutoff time.Time, batch int, clock func() time.Time) (int64, error) {
	deadline := clock().Add(passBudget)
	var total int64
	more := func() bool { return ctx.Err() == nil && clock().Before(deadline) }
	for _, d := range deletions {
		for more() {
			tag, err := db.Exec(ctx, d.sql, cutoff, batch)
			if err != nil {
				return total, fmt.Errorf("privacy: retention of %s: %w", d.table, err)
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < int64(batch) {
				break
			}
		}
	}
	for _, e := range emptyings {
		for more() {
			var n int
			err := store.InTx(ctx, db, func(tx pgx.Tx) (err error) {
				n, err = e.batch(ctx, tx, cutoff, batch)
				return err
			})
			if err != nil {
				return total, fmt.Errorf("privacy: retention of %s: %w", e.name, err)
			}
			total += int64(n)
			if n < batch {
				break
			}
		}
	}
	return total, ctx.Err()
}

// emptyings are the tables whose rows outlive their content.
var emptyings = []struct {
	name  string
	batch func(ctx context.Context, tx pgx.Tx, cutoff time.Time, batch int) (int, error)
}{
	{"inbound_messages", emptyInbound},
	{"runs", emptyRuns},
}

// emptyInbound empties the content of the next batch of inbound messages
// after the mark that arrived before cutoff, answered or given up (a
// pending one keeps its text until it is answered), and moves the mark.
// It returns how many rows it read.
func emptyInbound(ctx context.Context, tx pgx.Tx, cutoff time.Time, batch int) (int, error) {
	var last int64
	var key string
	err := tx.QueryRow(ctx, `SELECT key FROM retention_marks WHERE name = 'inbound_messages' FOR UPDATE`).Scan(&key)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	fmt.Sscan(key, &last) //nolint:errcheck // no mark yet: from the start
	var upto int64
	var n int
	err = tx.QueryRow(ctx, `
WITH next AS (SELECT id, received_at, status FROM inbound_messages WHERE id > $1 ORDER BY id LIMIT $3),
     due AS (SELECT id FROM next WHERE id < coalesce((SELECT min(id) FROM next WHERE received_at >= $2 OR status = 'pending'), 'infinity'::numeric)),
     emptied AS (UPDATE inbound_messages i SET text = '', raw = NULL, parts = NULL, quote = NULL, reply_to = '{}'
                 FROM due WHERE i.id = due.id RETURNING i.id)
SELECT coalesce(max(id), $1), count(*) FROM due`, last, cutoff, batch).Scan(&upto, &n)
	if err != nil || n == 0 {
		return 0, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO retention_marks (name, at, key) VALUES ('inbound_messages', $2, $1)
ON CONFLICT (name) DO UPDATE SET at = EXCLUDED.at, key = EXCLUDED.key`, fmt.Sprint(upto), cutoff)
	return n, err
}

// emptyRuns empties the replies, errors and steps of the next batch of
// runs after the mark that started before cutoff, and moves the mark.
func emptyRuns(ctx context.Context, tx pgx.Tx, cutoff time.Time, batch int) (int, error) {
	var at time.Time
	var id string
	err := tx.QueryRow(ctx, `SELECT at, key FROM retention_marks WHERE name = 'runs' FOR UPDATE`).Scan(&at, &id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	rows, err := tx.Query(ctx, `SELECT id, started_at FROM runs WHERE (started_at, id) > ($1, $2) AND started_at < $3
ORDER BY started_at, id LIMIT $4`, at, id, cutoff, batch)
	if err != nil {
		return 0, err
	}
	var ids []string
	for rows.Next() {
		if err := rows.Scan(&id, &at); err != nil {
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	for _, sql := range []string{
		`UPDATE runs SET reply = '', error = CASE WHEN error <> '' THEN $2 ELSE '' END,
  final_step = final_step || jsonb_build_object('args', '', 'observation', '', 'content', '', 'detail', NULL,
  'error', CASE WHEN final_step->>'error' <> '' THEN $2 ELSE '' END) WHERE id = ANY($1)`,
		`UPDATE run_steps SET args = '', observation = '', content = '', detail = NULL,
  error = CASE WHEN error <> '' THEN $2 ELSE '' END WHERE run_id = ANY($1)`,
	} {
		if _, err := tx.Exec(ctx, sql, ids, Expired); err != nil {
			return 0, err
		}
	}
	_, err = tx.Exec(ctx, `INSERT INTO retention_marks (name, at, key) VALUES ('runs', $1, $2)
ON CONFLICT (name) DO UPDATE SET at = EXCLUDED.at, key = EXCLUDED.key`, at, id)
	return len(ids), err
}
