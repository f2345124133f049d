package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AsyncTask is an async skill call waiting for its backend's callback.
type AsyncTask struct {
	ID        int64
	Skill     string
	TaskID    string
	RunID     string
	InboundID int64
	UserID    string
	Status    string
	ExpiresAt time.Time
}

// Async task statuses.
const (
	AsyncWaiting  = "waiting"
	AsyncDone     = "done"
	AsyncTimedOut = "timed_out"
)

// ErrAsyncGone means a callback token was already used or its task timed out.
var ErrAsyncGone = errors.New("store: async task already completed or timed out")

// InsertAsyncTask records an async call before its request is sent, so a
// callback can never arrive for a task we do not know.
func InsertAsyncTask(ctx context.Context, q Querier, tokenHash []byte, t AsyncTask, now time.Time) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, `
INSERT INTO async_tasks (token_hash, skill, run_id, inbound_id, user_id, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		tokenHash, t.Skill, t.RunID, t.InboundID, t.UserID, now, t.ExpiresAt).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: insert async task: %w", err)
	}
	return id, nil
}

// CompleteAsyncTask marks the task behind a callback token done, once: a
// second use of the token, or a use after the task timed out, returns
// ErrAsyncGone; an unknown token ErrNotFound.
func CompleteAsyncTask(ctx context.Context, q Querier, tokenHash []byte, taskID string, now time.Time) (AsyncTask, error) {
	var t AsyncTask
	err := q.QueryRow(ctx, `
UPDATE async_tasks SET status = 'done', completed_at = $2, task_id = CASE WHEN task_id = '' THEN $3 ELSE task_id END
WHERE token_hash = $1 AND status = 'waiting' AND expires_at > $2
RETURNING id, skill, task_id, run_id, inbound_id, user_id, status, expires_at`, tokenHash, now, taskID).Scan(
		&t.ID, &t.Skill, &t.TaskID, &t.RunID, &t.InboundID, &t.UserID, &t.Status, &t.ExpiresAt)
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("store: complete async task: %w", err)
	}
	var exists bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM async_tasks WHERE token_hash = $1)`, tokenHash).Scan(&exists); err != nil {
		return t, fmt.Errorf("store: complete async task: %w", err)
	}
	if exists {
		return t, ErrAsyncGone
	}
	return t, fmt.Errorf("async task: %w", ErrNotFound)
}

// ExpireAsyncTasks marks waiting tasks past their deadline timed out and
// returns them, each exactly once across replicas.
func ExpireAsyncTasks(ctx context.Context, q Querier, now time.Time, limit int) ([]AsyncTask, error) {
	rows, err := q.Query(ctx, `
UPDATE async_tasks SET status = 'timed_out', completed_at = $1
WHERE id IN (SELECT id FROM async_tasks WHERE status = 'waiting' AND expires_at <= $1
             ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
RETURNING id, skill, task_id, run_id, inbound_id, user_id, status, expires_at`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("store: expire async tasks: %w", err)
	}
	defer rows.Close()
	var out []AsyncTask
	for rows.Next() {
		var t AsyncTask
		if err := rows.Scan(&t.ID, &t.Skill, &t.TaskID, &t.RunID, &t.InboundID, &t.UserID, &t.Status, &t.ExpiresAt); err != nil {
			return nil, fmt.Errorf("store: expire async tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// AsyncTaskByToken finds the task a callback token was issued for. It
// returns ErrNotFound for an unknown token.
func AsyncTaskByToken(ctx context.Context, q Querier, tokenHash []byte) (AsyncTask, error) {
	var t AsyncTask
	err := q.QueryRow(ctx, `
SELECT id, skill, task_id, run_id, inbound_id, user_id, status, expires_at FROM async_tasks WHERE token_hash = $1`,
		tokenHash).Scan(&t.ID, &t.Skill, &t.TaskID, &t.RunID, &t.InboundID, &t.UserID, &t.Status, &t.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("async task: %w", ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("store: async task: %w", err)
	}
	return t, nil
}

// SetAsyncTaskID records the task id a backend answered (202) for the call
// behind a callback token, when none is recorded yet: its callback must
// then name that task.
func SetAsyncTaskID(ctx context.Context, q Querier, tokenHash []byte, taskID string) error {
	_, err := q.Exec(ctx, `UPDATE async_tasks SET task_id = $2 WHERE token_hash = $1 AND task_id = ''`, tokenHash, taskID)
	if err != nil {
		return fmt.Errorf("store: set async task id: %w", err)
	}
	return nil
}

// SetRunAsyncTaskID records the task id a backend answered (202) for the
// oldest call of skill in run that has none yet, so a timeout can name it.
func SetRunAsyncTaskID(ctx context.Context, q Querier, runID, skill, taskID string) error {
	_, err := q.Exec(ctx, `
UPDATE async_tasks SET task_id = $3
WHERE id = (SELECT id FROM async_tasks WHERE run_id = $1 AND skill = $2 AND task_id = '' ORDER BY id LIMIT 1)`,
		runID, skill, taskID)
	if err != nil {
		return fmt.Errorf("store: set async task id: %w", err)
	}
	return nil
}
