package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// The outbox and delivery stages on their own: a pool on a fresh
// database, an insert-only River client, the in-memory channel; no
// Gateway, no workers. The delivery is called as its job would be.

// outboxStage is an Outbox and the delivery that sends what it queues.
type outboxStage struct {
	pool   *pgxpool.Pool
	ch     *chantest.Channel
	outbox *Outbox
	deliv  *delivery
}

func newOutboxStage(t *testing.T, limits channels.Limits) *outboxStage {
	t.Helper()
	pool := storetest.NewPool(t)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{}) // inserts only
	if err != nil {
		t.Fatal(err)
	}
	ch := chantest.New("test", limits)
	chans := map[string]channels.Channel{"test": ch}
	jobs := &Jobs{river: client, queueFor: func(string) (string, string) { return QueueAgent, QueueDelivery }}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &outboxStage{pool: pool, ch: ch, outbox: &Outbox{channels: chans, jobs: jobs},
		deliv: &delivery{pool: pool, channels: chans, pacer: &pacer{now: time.Now, log: log},
			tracer: ops.TracerOf(nil), now: time.Now, log: log}}
}

// queue writes replies (key → text) to to in one transaction, committed
// unless rollback.
func (s *outboxStage) queue(t *testing.T, to Address, rollback bool, replies ...[2]string) {
	t.Helper()
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, r := range replies {
		if _, err := s.outbox.Queue(ctx, tx, r[0], to, r[1]); err != nil {
			t.Fatal(err)
		}
	}
	if !rollback {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *outboxStage) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOutboxAndDeliveryStage(t *testing.T) {
	t.Parallel()
	limits := channels.Limits{MaxBytes: 64, Format: channels.FormatMarkdown, Dialect: channels.DialectStandard}
	chat := func(id string) Address {
		return Address{Channel: "test", Account: "a", ChatID: id, ReplyTo: []byte(`{"chat_id":"` + id + `"}`)}
	}

	// A conversation's replies, queued in one transaction, go out once, all
	// of them in the order written, whichever reply's job runs first; the
	// parts of a long reply stay within the channel's size and join back
	// to its text; another chat's reply waits for its own job.
	t.Run("InOrderOnce", func(t *testing.T) {
		t.Parallel()
		s := newOutboxStage(t, limits)
		ctx := context.Background()
		long := strings.Repeat("第一段回答。", 10) + "\n\n" + strings.Repeat("第二段回答。", 10)
		s.queue(t, chat("c1"), false, [2]string{"answer:1", long}, [2]string{"answer:2", "第二条回复"})
		s.queue(t, chat("c2"), false, [2]string{"answer:3", "别的群"})
		if n := s.count(t, `SELECT count(*) FROM river_job WHERE kind = $1 AND queue = $2`, DeliverReplyArgs{}.Kind(), QueueDelivery); n != 3 {
			t.Fatalf("%d delivery jobs, want one per reply (3)", n)
		}

		res, busy, err := s.deliv.deliverLocked(ctx, "answer:2", "", false, false) // the later reply's job first
		if err != nil || busy || res.err != nil {
			t.Fatalf("deliver: busy %v, %v, %v", busy, err, res.err)
		}
		sent := s.ch.Sent()
		if len(sent) < 3 {
			t.Fatalf("%d parts sent, want the long reply's (2 or more) and the second", len(sent))
		}
		var joined strings.Builder
		for i, out := range sent[:len(sent)-1] {
			if len(out.Text) > limits.MaxBytes || out.Part != i || out.Parts != len(sent)-1 || !strings.HasPrefix(out.Key, "answer:1/") {
				t.Fatalf("part %d: %d bytes, part %d of %d, key %s", i, len(out.Text), out.Part, out.Parts, out.Key)
			}
			if chantest.AddressOf(out).ChatID != "c1" {
				t.Fatalf("part %d went to %+v, want c1", i, chantest.AddressOf(out))
			}
			joined.WriteString(out.Text)
		}
		if strings.Join(strings.Fields(joined.String()), "") != strings.Join(strings.Fields(long), "") {
			t.Errorf("the parts join to %q, want the reply %q", joined.String(), long)
		}
		if last := sent[len(sent)-1]; last.Text != "第二条回复" || last.Key != "answer:2/0" {
			t.Errorf("last send %q (%s), want the second reply after the first", last.Text, last.Key)
		}

		// The first reply's job finds nothing left; the other chat's sends
		// its own reply.
		if _, _, err := s.deliv.deliverLocked(ctx, "answer:1", "", false, false); err != nil {
			t.Fatal(err)
		}
		if n := len(s.ch.Sent()); n != len(sent) {
			t.Fatalf("%d sends after the first reply's job, want %d: a part went twice", n, len(sent))
		}
		if _, _, err := s.deliv.deliverLocked(ctx, "answer:3", "", false, false); err != nil {
			t.Fatal(err)
		}
		if all := s.ch.Sent(); len(all) != len(sent)+1 || all[len(all)-1].Text != "别的群" {
			t.Fatalf("after the other chat's job: %d sends, last %q", len(all), all[len(all)-1].Text)
		}
		if n := s.count(t, `SELECT count(*) FROM outbox WHERE delivered_at IS NULL`); n != 0 {
			t.Errorf("%d parts left undelivered", n)
		}
	})

	// A reply is queued exactly when its transaction commits: rolled back,
	// neither its parts nor its job remain.
	t.Run("RolledBackQueuesNothing", func(t *testing.T) {
		t.Parallel()
		s := newOutboxStage(t, limits)
		s.queue(t, chat("c1"), true, [2]string{"answer:1", "不会发出"})
		if n := s.count(t, `SELECT count(*) FROM outbox`) + s.count(t, `SELECT count(*) FROM river_job`); n != 0 {
			t.Fatalf("%d rows after a rollback, want none", n)
		}
	})

	// A permanent refusal gives the part up (the job is cancelled, not
	// retried); a reply to a channel the gateway does not have is refused
	// when queued.
	t.Run("PermanentFailureGivesUp", func(t *testing.T) {
		t.Parallel()
		s := newOutboxStage(t, limits)
		ctx := context.Background()
		s.ch.FailWith(func(channels.Outbound) error { return channels.ErrPermanent })
		s.queue(t, chat("c1"), false, [2]string{"answer:1", "被拒绝"})
		res, _, err := s.deliv.deliverLocked(ctx, "answer:1", "", false, true)
		if err != nil || !res.permanent || !errors.Is(res.err, channels.ErrPermanent) {
			t.Fatalf("deliver: %v, result %+v; want a permanent failure", err, res)
		}
		if n := s.count(t, `SELECT count(*) FROM outbox WHERE delivered_at IS NULL AND failed_at IS NULL`); n != 0 {
			t.Errorf("%d parts still pending after a permanent failure", n)
		}
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := s.outbox.Queue(ctx, tx, "answer:2", Address{Channel: "nowhere", Account: "a", ChatID: "c"}, "x"); !errors.Is(err, errNoChannel) {
			t.Fatalf("queue to an unknown channel: %v, want errNoChannel", err)
		}
	})
}

// A delivery takes one of the replica's send slots (worker.delivery_
// concurrency, shared by inline sends and delivery jobs) before it takes
// a pool connection for its conversation's lock: with every slot taken it
// waits, holding no connection, and goes on once one is given back. A
// burst of unbounded inline sends held the whole pool, and their access
// token reads timed out (BenchmarkAckThroughput hung).
func TestDeliveryWaitsForASendSlot(t *testing.T) {
	t.Parallel()
	s := newOutboxStage(t, channels.Limits{MaxBytes: 2048})
	s.deliv.sends = make(chan struct{}, 2)
	s.queue(t, Address{Channel: "test", Account: "a", ChatID: "c", ReplyTo: []byte(`{"chat_id":"c"}`)}, false, [2]string{"answer:1", "答"})
	s.deliv.sends <- struct{}{} // two deliveries in progress elsewhere
	s.deliv.sends <- struct{}{}
	before := s.pool.Stat().AcquireCount()
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := s.deliv.deliverLocked(short, "answer:1", "", false, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delivery with every slot taken: %v, want it to wait until its deadline", err)
	}
	if n := s.pool.Stat().AcquireCount() - before; n != 0 || len(s.ch.Sent()) != 0 {
		t.Fatalf("waiting for a slot took %d connections and sent %d parts, want none", n, len(s.ch.Sent()))
	}
	<-s.deliv.sends // one ends
	if _, _, err := s.deliv.deliverLocked(context.Background(), "answer:1", "", false, false); err != nil || len(s.ch.Sent()) != 1 {
		t.Fatalf("delivery with a slot free: %v, %d sent", err, len(s.ch.Sent()))
	}
	if n := len(s.deliv.sends); n != 1 {
		t.Fatalf("%d slots taken after the delivery, want its slot given back (1)", n)
	}
}
