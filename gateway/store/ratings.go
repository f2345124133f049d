package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RatingPoint is the ratings given in one bucket (a day on the overview).
type RatingPoint struct {
	At       time.Time
	Up, Down int
}

// RatingChart counts the 👍 and 👎 given per bucket (gateway/ratings).
func RatingChart(ctx context.Context, q Querier, r ChartRange) ([]RatingPoint, error) {
	return collectChart[RatingPoint](ctx, q, "ratings", `
SELECT date_bin($3, rated_at, $1), count(*) FILTER (WHERE rating > 0)::int, count(*) FILTER (WHERE rating < 0)::int
FROM run_ratings WHERE rated_at >= $1 AND rated_at < $2 /*account*/
GROUP BY 1 ORDER BY 1`, r, ownAccount)
}

// RunRating is a run's rating: 1, -1, or 0 when it has none.
func RunRating(ctx context.Context, q Querier, runID string) (int, error) {
	var rating int
	err := q.QueryRow(ctx, `SELECT rating FROM run_ratings WHERE run_id = $1`, runID).Scan(&rating)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: run rating: %w", err)
	}
	return rating, nil
}

// RateWindow is how recent an answer must be to be rated: a 👍 long after
// the answer is more likely a reaction to something else in the chat.
const RateWindow = time.Hour

// RateRun records rating (1 or -1) for run runID, replacing an earlier
// rating of it: the tap on an answer's rating button.
func RateRun(ctx context.Context, q Querier, runID, channel, account string, rating int, now time.Time) error {
	_, err := q.Exec(ctx, `
INSERT INTO run_ratings (run_id, rating, channel, account, rated_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (run_id) DO UPDATE SET rating = excluded.rating, rated_at = excluded.rated_at`, runID, rating, channel, account, now)
	if err != nil {
		return fmt.Errorf("store: rate run %s: %w", runID, err)
	}
	return nil
}

// RatingChart is the package function over the console's pool.
func (c *Console) RatingChart(ctx context.Context, r ChartRange) ([]RatingPoint, error) {
	return RatingChart(ctx, c.pool, r)
}

// RunRating is the package function over the console's pool.
func (c *Console) RunRating(ctx context.Context, runID string) (int, error) {
	return RunRating(ctx, c.pool, runID)
}
