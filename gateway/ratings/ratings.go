// Package ratings lets an employee rate an answer: a message that is only
// 👍 or 👎 (or the words of messages.ratings) rates the sender's newest
// answer in that chat, within Window. It is a gateway.CommandFeature: the
// rating is answered before any run and never becomes conversation. The
// console shows each run's rating and the rates per day
// (gateway/store.RatingChart).
package ratings

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Window is how recent an answer must be to be rated (the rating buttons
// of an answer sent as a card stay live as long).
const Window = store.RateWindow

// Service rates answers for one gateway; make one with New.
type Service struct {
	s gateway.Services
}

var _ gateway.CommandFeature = (*Service)(nil)

// New is a ratings service to attach to a gateway.
func New() *Service { return &Service{} }

// Attach implements gateway.Feature.
func (r *Service) Attach(s gateway.Services) error {
	r.s = s
	return nil
}

func (r *Service) words() config.RatingMessages { return r.s.Config.Messages.Ratings }

// Help implements gateway.CommandFeature.
func (r *Service) Help(string, string) string { return r.words().Help }

// Private implements gateway.CommandFeature: a rating says nothing worth
// keeping beside the rating itself.
func (r *Service) Private() bool { return true }

// Command implements gateway.CommandFeature.
func (r *Service) Command(ctx context.Context, in channels.Inbound, _ int64) (string, bool, error) {
	rating := Parse(in.Text, r.words())
	if rating == 0 {
		return "", false, nil
	}
	rated, err := Rate(ctx, r.s.Pool, in, rating, r.s.Now())
	if err != nil {
		return "", true, err
	}
	switch {
	case !rated:
		return r.words().Nothing, true, nil
	case rating > 0:
		return r.words().ThanksUp, true, nil
	default:
		return r.words().ThanksDown, true, nil
	}
}

// Parse is the rating text is, 1 or -1, or 0 when it is anything else: the
// whole message must be one of the words (「这个回答有用吗」 is a question).
func Parse(text string, w config.RatingMessages) int {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return 0
	case slices.Contains(w.UpWords, t):
		return 1
	case slices.Contains(w.DownWords, t):
		return -1
	}
	return 0
}

// Rate records rating for the newest run that answered in's sender in
// in's chat since now-Window (replacing an earlier rating of it); false
// when there is none. One statement: the run is found and rated at once
// (sessions are unique per channel, account, chat and user, so the join
// gives at most one row).
func Rate(ctx context.Context, q store.Querier, in channels.Inbound, rating int, now time.Time) (bool, error) {
	var runID string
	err := q.QueryRow(ctx, `
INSERT INTO run_ratings (run_id, rating, channel, account, rated_at)
SELECT r.id, $5, s.channel, s.account, $6
FROM sessions s JOIN LATERAL (
    SELECT id FROM runs WHERE session_id = s.id AND started_at >= $7 ORDER BY started_at DESC LIMIT 1) r ON true
WHERE s.channel = $1 AND s.account = $2 AND s.chat_id = $3 AND s.user_id = $4
ON CONFLICT (run_id) DO UPDATE SET rating = excluded.rating, rated_at = excluded.rated_at
RETURNING run_id`, in.Channel, in.Account, in.ChatID, in.Sender.UserID, rating, now, now.Add(-Window)).Scan(&runID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ratings: rate: %w", err)
	}
	return true, nil
}
