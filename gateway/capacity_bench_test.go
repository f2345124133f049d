package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store"
)

// capacityScenario is users writing at once to a model taking
// benchLatency per call that allows modelLimit calls at once, each replica
// with a pool of maxConns.
type capacityScenario struct {
	messages, atOnce, modelLimit, maxConns int
}

// ideal is the time the model alone needs: benchLatency per wave of
// modelLimit calls.
func (sc capacityScenario) ideal() float64 {
	return float64(sc.messages) / float64(sc.modelLimit) * benchLatency.Seconds()
}

const benchLatency = 2 * time.Second

var (
	// The scenario of issue 8: 1,000 users writing at 9:00, 32 messages
	// at once, to a model allowing 500 calls at once.
	thousandAt9 = capacityScenario{messages: 1000, atOnce: 32, modelLimit: 500, maxConns: 20}
	// Issue 20's: 5,000 runs waiting on one replica, 2,500 model calls
	// allowed at once, 20 database connections.
	fiveThousandWaiting = capacityScenario{messages: 5000, atOnce: 32, modelLimit: 2500, maxConns: 20}
)

// BenchmarkThousandConversations runs the scenario once per iteration on
// one replica and on two (two gateways in this process on one database,
// each with its own pool of 20). The model's limit is split between the
// replicas (model.max_concurrent is per replica). It reports the time from
// the first message to the last reply against the ideal 4 s, the ack
// (Sink.Accept) p50/p99 during the burst, the process's peak RSS (the fake
// model and the senders included), the peak Postgres connections of the
// replicas (pg_stat_activity) and the replies delivered.
//
//	make bench   (or: go test -run '^$' -bench ThousandConversations -benchtime 1x ./gateway/)
func BenchmarkThousandConversations(b *testing.B) {
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			for range b.N {
				conversations(b, thousandAt9, replicas)
			}
		})
	}
}

// BenchmarkFiveThousandWaiting holds 5,000 runs at once on one replica,
// up to 2,500 of them waiting on the 2 s model and the rest on the
// model's limit; every one must be answered once. The process runs with
// the soft memory limit the README's capacity section tells a deployment
// to set (GOMEMLIMIT, here 300 MiB): without one, the garbage of the
// runs' ramp-up lifts the peak RSS to about 600 MB.
//
//	make bench   (or: go test -run '^$' -bench FiveThousandWaiting -benchtime 1x ./gateway/)
func BenchmarkFiveThousandWaiting(b *testing.B) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(300 << 20))
	for range b.N {
		conversations(b, fiveThousandWaiting, 1)
	}
}

func conversations(b *testing.B, sc capacityScenario, replicas int) {
	h := gatewaytest.New(b)
	h.Model.ForgetRequests() // the fake's log of thousands of requests is not the gateway's memory
	var inFlight, overLimit atomic.Int32
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		if int(inFlight.Add(1)) > sc.modelLimit {
			inFlight.Add(-1)
			overLimit.Add(1)
			return openaitest.Reply{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"1"}}}
		}
		return openaitest.Reply{Content: "好的", Hook: func(ctx context.Context) error {
			defer inFlight.Add(-1)
			select { // the model thinks for 2 s
			case <-time.After(benchLatency):
			case <-ctx.Done():
			}
			return nil
		}}
	})
	ch := gatewaytest.Channel(2048)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h.ModelYAML = fmt.Sprintf("  max_concurrent: %d", sc.modelLimit/replicas)
	extra := fmt.Sprintf("worker:\n  agent_concurrency: %d\n  processing_hint_after: 10m\n", sc.messages)
	var gws []*gateway.Gateway
	for r := range replicas {
		pool, err := store.Open(context.Background(), h.DBURL+fmt.Sprintf("&application_name=hermes-bench-%d", r), int32(sc.maxConns))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		gws = append(gws, h.StartExtra(extra, gateway.Deps{Pool: pool, Channels: []channels.Channel{ch}, Logger: quiet}))
	}
	ctx := gatewaytest.WithTimeout(b, 5*time.Minute)
	resetPeakRSS()
	idleRSS := procStatus("VmRSS:")

	mon := startMonitor(ctx, h)
	if os.Getenv("HERMES_BENCH_TIMELINE") != "" {
		// Where the time goes: model calls, answers, leases, sends, per second.
		go func() {
			t0, tick := time.Now(), time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-mon.done:
					return
				case <-tick.C:
				}
				var done, leases int
				_ = h.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM inbound_messages WHERE status = 'done'),
  (SELECT count(*) FROM sessions s JOIN inbound_messages m ON m.id = s.lease_inbound_id AND m.status = 'pending' WHERE s.lease_run_id IS NOT NULL)`).Scan(&done, &leases)
				fmt.Printf("  t=%.0fs model calls %d (in flight %d), answered %d, leases %d, sent %d\n",
					time.Since(t0).Seconds(), h.Model.Received(), inFlight.Load(), done, leases, len(ch.Sent()))
			}
		}()
	}
	b.ResetTimer()
	start := time.Now()
	lat := sendAll(b, sc.messages, sc.atOnce, func(i int) channels.Inbound {
		u := fmt.Sprintf("user%04d", i)
		return ch.Message("a", "bench-"+u, u, u, "我还有几天年假？", false, false)
	}, gws)
	if _, err := ch.WaitSent(ctx, sc.messages); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	b.StopTimer()
	conns, active := mon.stop()
	rss := procStatus("VmHWM:")

	perKey := map[string]int{}
	for _, out := range replies(ch.Sent()) {
		perKey[out.Key]++
	}
	if len(perKey) != sc.messages {
		b.Errorf("replies to %d messages, want %d", len(perKey), sc.messages)
	}
	for key, n := range perKey {
		if n != 1 {
			b.Errorf("%s answered %d times", key, n)
		}
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	b.ReportMetric(took.Seconds(), "s-last-reply")
	b.ReportMetric(took.Seconds()/sc.ideal(), "x-ideal")
	b.ReportMetric(float64(p50.Microseconds())/1000, "ack-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "ack-p99-ms")
	b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(conns), "peak-conns")
	b.ReportMetric(float64(len(perKey)), "replies")
	fmt.Printf("%d replica(s): %d messages answered in %.1fs (ideal %.0fs, ×%.2f); ack p50 %s p99 %s; "+
		"peak RSS %.0f MB (whole process, %.0f MB before the burst); peak connections %d (%d active, limit %d); replies %d; model 429s %d\n",
		replicas, sc.messages, took.Seconds(), sc.ideal(), took.Seconds()/sc.ideal(),
		p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), float64(rss)/(1<<20), float64(idleRSS)/(1<<20),
		conns, active, replicas*sc.maxConns, len(perKey), overLimit.Load())
}

// monitor samples the replicas' Postgres connections (by application
// name) every 20 ms on a connection of its own.
type monitor struct {
	done          chan struct{}
	cancel        context.CancelFunc
	conns, active int
}

func startMonitor(ctx context.Context, h *gatewaytest.Harness) *monitor {
	ctx, cancel := context.WithCancel(ctx)
	m := &monitor{done: make(chan struct{}), cancel: cancel}
	conn, err := pgx.Connect(ctx, h.DBURL)
	if err != nil {
		h.T.Fatal(err)
	}
	go func() {
		defer close(m.done)
		defer conn.Close(context.Background()) //nolint:errcheck
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var all, active int
			err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state <> 'idle')
FROM pg_stat_activity WHERE application_name LIKE 'hermes-bench-%'`).Scan(&all, &active)
			if err == nil {
				m.conns, m.active = max(m.conns, all), max(m.active, active)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

// stop ends sampling and returns the peaks: connections open, and busy.
func (m *monitor) stop() (conns, active int) {
	m.cancel()
	<-m.done
	return m.conns, m.active
}

// resetPeakRSS starts the peak RSS afresh (Linux: clear_refs 5), so the
// second scenario does not report the first one's peak.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// procStatus reads a size from /proc/self/status (VmHWM: the peak resident
// set; VmRSS: the current one) in bytes.
func procStatus(key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkAcceptVsInsert compares the ack path (Sink.Accept: the inbound
// row and its River job in one transaction, with River's insert
// notification, sent at most once per 20 ms per queue) with a bare INSERT
// of the inbound row in a transaction, and with the River insert without
// any notification and with one on every insert. The variants take turns
// within one loop, so a machine shared with others slows them alike; each
// reports its median.
//
//	go test -run '^$' -bench AcceptVsInsert -benchtime 3000x ./gateway/
func BenchmarkAcceptVsInsert(b *testing.B) {
	h := gatewaytest.New(b)
	ch := gatewaytest.Channel(2048)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	gw := h.Start(gateway.Deps{Queues: map[string]int{}, Partial: true, Channels: []channels.Channel{ch}, Logger: quiet})
	rc, err := river.NewClient(riverpgxv5.New(h.Pool), &river.Config{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	msg := func(kind string, i int) channels.Inbound {
		u := fmt.Sprintf("u%d", i%100)
		return ch.Message("a", fmt.Sprintf("%s-%d", kind, i), u, u, "我还有几天年假？", false, false)
	}
	// insertTx is the inbound row plus then(tx, its id), in one transaction.
	insertTx := func(kind string, then func(pgx.Tx, int64) error) func(int) error {
		return func(i int) error {
			return store.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
				id, _, err := store.InsertInbound(ctx, tx, msg(kind, i), store.InboundPending)
				if err != nil {
					return err
				}
				return then(tx, id)
			})
		}
	}
	// A job scheduled for later is inserted without a notification.
	later := func(tx pgx.Tx, id int64) error {
		_, err := rc.InsertTx(ctx, tx, gateway.ProcessInboundArgs{InboundID: id},
			&river.InsertOpts{Queue: "bench", ScheduledAt: time.Now().Add(time.Hour)})
		return err
	}
	variants := []struct {
		name string
		do   func(int) error
	}{
		{"bare-insert", insertTx("bare", func(pgx.Tx, int64) error { return nil })},
		{"insert+job", insertTx("job", later)},
		{"accept", func(i int) error { _, err := gw.Accept(ctx, msg("accept", i)); return err }},
		{"insert+job+notify", insertTx("notify", func(tx pgx.Tx, id int64) error {
			if err := later(tx, id); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT pg_notify('river_insert', '{"queue": "bench"}')`)
			return err
		})},
	}
	lat := make([][]time.Duration, len(variants))
	b.ResetTimer()
	for i := range b.N {
		for v, variant := range variants {
			start := time.Now()
			if err := variant.do(i); err != nil {
				b.Fatal(err)
			}
			lat[v] = append(lat[v], time.Since(start))
		}
	}
	b.StopTimer()
	var line []string
	for v, variant := range variants {
		slices.Sort(lat[v])
		med := lat[v][len(lat[v])/2]
		b.ReportMetric(float64(med.Microseconds()), variant.name+"-µs")
		line = append(line, fmt.Sprintf("%s %s", variant.name, med.Round(time.Microsecond)))
	}
	if b.N == 1 {
		return // the probe run of -benchtime; too few to say anything
	}
	fmt.Printf("\nmedian per transaction: %s; accept / bare insert = %.2f\n", strings.Join(line, ", "),
		float64(lat[2][len(lat[2])/2])/float64(lat[0][len(lat[0])/2]))
}
