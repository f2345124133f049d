package gatewaytest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// WaitIdle waits until no job is left to run: everything acknowledged has
// been processed and delivered (or given up).
func (h *Harness) WaitIdle(ctx context.Context) {
	h.T.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var open int
		err := h.Pool.QueryRow(ctx, storetest.OpenWork).Scan(&open)
		if err != nil {
			h.T.Fatal(err)
		}
		if open == 0 {
			return
		}
		select {
		case <-ctx.Done():
			var jobs string
			_ = h.Pool.QueryRow(context.Background(), `SELECT string_agg(kind || '@' || queue || ':' || state, ', ') FROM river_job
				WHERE state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&jobs)
			h.T.Fatalf("work still open after waiting: %d (jobs: %s)", open, jobs)
		case <-tick.C:
		}
	}
}

// MessageJobs counts the work a message creates: the job that answers
// it, the delivery of its reply, and what learns from it, and its run
// (a replica that answers it itself queues no job). Counting these
// kinds, not "every job but the periodic ones", keeps a periodic sweep
// that starts meanwhile from counting as a stored message.
func (h *Harness) MessageJobs() int {
	h.T.Helper()
	return h.Count(`SELECT (SELECT count(*) FROM river_job WHERE kind = ANY($1)) + (SELECT count(*) FROM runs)`,
		[]string{gateway.ProcessInboundArgs{}.Kind(), gateway.DeliverReplyArgs{}.Kind(), memory.LearnArgs{}.Kind()})
}

// Count runs a query of one integer on the harness's database.
func (h *Harness) Count(query string, args ...any) int {
	h.T.Helper()
	var n int
	if err := h.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		h.T.Fatal(err)
	}
	return n
}

// Logger writes to the test's output, shown only for failed or -v runs.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// WithTimeout is a context that ends after d or with the test.
func WithTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor polls cond until it holds or ctx ends.
func WaitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition never held")
		case <-tick.C:
		}
	}
}

// Accept hands in to gw as a channel would and fails t on an error.
func Accept(t *testing.T, gw *gateway.Gateway, in channels.Inbound) channels.Receipt {
	t.Helper()
	r, err := gw.Accept(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Env is a config lookup over m alone (nil: no environment), for
// config.ParseConfig.
func Env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// Channel is the in-memory test channel ("test") cutting texts at
// maxBytes, in standard Markdown.
func Channel(maxBytes int) *chantest.Channel {
	return chantest.New("test", channels.Limits{MaxBytes: maxBytes, Format: channels.FormatMarkdown, Dialect: channels.DialectStandard})
}
