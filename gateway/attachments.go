package gateway

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/media"
	"github.com/hermes-gw/hermes/gateway/store"
)

// mediaPurgeInterval is how often the leader purges attachments past
// media.retention.
const mediaPurgeInterval = time.Hour

// fetchMedia downloads row's attachments (media.Fetch) through its
// channel, before the message waits for its session.
func (rn *runner) fetchMedia(ctx context.Context, row store.InboundRow, final bool) error {
	fetcher, _ := rn.channels[row.In.Channel].(channels.MediaFetcher)
	return media.Fetch(ctx, rn.pool, fetcher, row, rn.cfg.Media, rn.now, final, rn.log)
}

// mediaInput turns row's parts into the model's input and records what
// each attachment became.
func (rn *runner) mediaInput(ctx context.Context, row store.InboundRow) (media.Input, error) {
	fetched, err := store.MediaOf(ctx, rn.pool, row.ID)
	if err != nil {
		return media.Input{}, err
	}
	in := media.Prepare(ctx, row.In.Parts, fetched, media.Options{
		Vision: rn.cfg.Model.Vision, Limits: rn.cfg.Media, Words: rn.cfg.Messages.Media,
		Describer: rn.describe, Transcriber: rn.transcribe})
	for part, became := range in.Became {
		if err := store.SetMediaBecame(ctx, rn.pool, row.ID, part, became); err != nil {
			return media.Input{}, err
		}
	}
	return in, nil
}

// resolveQuote fills row's quote from a channel that names quotes without
// carrying them; a quote that cannot be read is left out (the question
// still gets its answer).
func (rn *runner) resolveQuote(ctx context.Context, row *store.InboundRow) {
	qr, ok := rn.channels[row.In.Channel].(channels.QuoteResolver)
	if !ok || row.In.Quote != nil {
		return
	}
	q, err := qr.ResolveQuote(ctx, row.In)
	if err != nil {
		rn.log.Warn("quoted message unreadable; answering without it", "inbound_id", row.ID, "err", err)
		return
	}
	row.In.Quote = q
}

// purgeMediaArgs is the leader's periodic purge of attachments' bytes past
// media.retention, and of the intake counts no window reaches.
type purgeMediaArgs struct{}

// Kind implements river.JobArgs.
func (purgeMediaArgs) Kind() string { return "hermes.purge_media" }

type purgeMediaWorker struct {
	river.WorkerDefaults[purgeMediaArgs]
	pool      *pgxpool.Pool
	retention time.Duration // media.retention
	now       func() time.Time
	log       *slog.Logger
}

func (w *purgeMediaWorker) Work(ctx context.Context, _ *river.Job[purgeMediaArgs]) error {
	n, err := store.PurgeMedia(ctx, w.pool, w.now().Add(-w.retention))
	if n > 0 {
		w.log.Info("media past retention purged", "attachments", n)
	}
	if err != nil {
		return err
	}
	// The intake counts of media.attachments_per_minute share pace_sends
	// with pacing, whose sweep runs only where a channel has send limits:
	// this one runs everywhere.
	_, err = store.SweepSends(ctx, w.pool, w.now().Add(-paceWindow))
	return err
}
