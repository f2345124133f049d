package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store"
)

// replies are the answers among sends (not processing hints).
func replies(sent []channels.Outbound) []channels.Outbound {
	var out []channels.Outbound
	for _, s := range sent {
		if strings.HasPrefix(s.Key, "inbound:") {
			out = append(out, s)
		}
	}
	return out
}

// Fifty messages of one user, handed to two replicas in turn, are answered
// one at a time and in the order written, each exactly once.
func TestFiftyMessagesOfOneUserAcrossTwoReplicas(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h := gatewaytest.New(t)
	var mu sync.Mutex
	inFlight, overlap := 0, false
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		text := req.Messages[len(req.Messages)-1].Content
		return openaitest.Reply{Content: "答：" + text, Hook: func(ctx context.Context) error {
			mu.Lock()
			inFlight++
			overlap = overlap || inFlight > 1
			mu.Unlock()
			select { // a model that thinks a little, so that overlaps would show
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
			}
			mu.Lock()
			inFlight--
			mu.Unlock()
			return nil
		}}
	})
	ch := gatewaytest.Channel(2048)
	extra := "worker:\n  processing_hint_after: 10m\nagent:\n  history_turns: 1\n"
	gws := []*gateway.Gateway{
		h.StartExtra(extra, gateway.Deps{Pool: h.NewPool(20), Channels: []channels.Channel{ch}}),
		h.StartExtra(extra, gateway.Deps{Pool: h.NewPool(20), Channels: []channels.Channel{ch}}),
	}
	ctx := gatewaytest.WithTimeout(t, 120*time.Second)
	const n = 50
	for i := range n {
		gatewaytest.Accept(t, gws[i%2], ch.Message("a", fmt.Sprintf("one-%02d", i), "zhangsan", "zhangsan", fmt.Sprintf("第%02d条", i), false, false))
	}
	if _, err := ch.WaitSent(ctx, n); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	got := replies(ch.Sent())
	if len(got) != n {
		t.Fatalf("%d replies, want %d", len(got), n)
	}
	for i, out := range got {
		if want := fmt.Sprintf("答：第%02d条", i); out.Text != want {
			t.Fatalf("reply %d is %q, want %q (answers out of order)", i, out.Text, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Fatal("two runs of one session overlapped")
	}
}

// A run whose replica died leaves its session lease behind. Once the lease
// lapses (the injected clock moves past it) a sweeper takes it and the
// message is answered, once; the dead replica's job, rescued later by
// River, finds it answered.
func TestLapsedLeaseIsTakenUpAndAnsweredOnce(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	echoModel(h)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ch := gatewaytest.Channel(2048)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)

	// The message is accepted; its job was taken by a replica that then
	// died mid-run, holding the session's lease.
	inbox := h.Start(gateway.Deps{Queues: map[string]int{}, Partial: true, Channels: []channels.Channel{ch}, Now: clock})
	in := ch.Message("a", "lapse-1", "zhangsan", "zhangsan", "我还有几天年假？", false, false)
	gatewaytest.Accept(t, inbox, in)
	sessionID, err := store.EnsureSession(ctx, h.Pool, store.SessionKey{Channel: in.Channel, Account: in.Account, ChatID: in.ChatID, UserID: in.Sender.UserID}, clock())
	if err != nil {
		t.Fatal(err)
	}
	var inboundID int64
	if err := h.Pool.QueryRow(ctx, `SELECT id FROM inbound_messages WHERE platform_msg_id = 'lapse-1'`).Scan(&inboundID); err != nil {
		t.Fatal(err)
	}
	if ok, err := store.ClaimSessionLease(ctx, h.Pool, store.SessionLease{SessionID: sessionID, InboundID: inboundID,
		Holder: "dead-replica", RunID: "dead-run"}, clock(), clock().Add(10*time.Second)); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if _, err := h.Pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()`); err != nil {
		t.Fatal(err)
	}

	live := h.StartExtra("worker:\n  run_lease: 2s\n", gateway.Deps{Channels: []channels.Channel{ch}, Now: clock})
	if n, err := live.SweepLeases(ctx); err != nil || n != 0 {
		t.Fatalf("sweep of a live lease took %d (%v), want 0", n, err)
	}
	if n := len(ch.Sent()); n != 0 {
		t.Fatalf("%d sends while the dead replica's lease still ran", n)
	}
	mu.Lock()
	now = now.Add(11 * time.Second)
	mu.Unlock()
	if _, err := ch.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// River's rescuer makes the dead replica's job available again.
	if _, err := h.Pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now() WHERE state = 'running'`); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if got := replies(ch.Sent()); len(got) != 1 || got[0].Text != "答：我还有几天年假？" {
		t.Fatalf("sent %+v, want one answer", got)
	}
	if n := h.Count(`SELECT count(*) FROM runs`); n != 1 {
		t.Fatalf("runs = %d, want 1", n)
	}
	if n := h.Count(`SELECT count(*) FROM sessions s JOIN inbound_messages m ON m.id = s.lease_inbound_id AND m.status = 'pending' WHERE s.lease_run_id IS NOT NULL`); n != 0 {
		t.Fatalf("%d session leases left", n)
	}
}

// While the model answers 429 with Retry-After, runs wait (all of this
// replica's calls pause for it) and are answered once it recovers; none
// fails, though the storm outlasts the agent's own retries.
func TestModel429StormSlowsRunsWithoutFailingThem(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	const users, storm = 10, 40 // four waves of 429s: more than agent.DefaultModelAttempts
	var tooMany atomic.Int32
	var mu sync.Mutex
	var first429, firstOK time.Time
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if tooMany.Add(1) <= storm {
			if first429.IsZero() {
				first429 = time.Now()
			}
			return openaitest.Reply{Status: http.StatusTooManyRequests, Content: "Rate limit reached",
				Header: http.Header{"Retry-After": {"1"}}}
		}
		if firstOK.IsZero() {
			firstOK = time.Now()
		}
		return openaitest.Reply{Content: "答：" + req.Messages[len(req.Messages)-1].Content}
	})
	ch := gatewaytest.Channel(2048)
	gw := h.StartExtra("worker:\n  processing_hint_after: 10m\n", gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	for i := range users {
		gatewaytest.Accept(t, gw, ch.Message("a", fmt.Sprintf("storm-%d", i), fmt.Sprintf("u%d", i), fmt.Sprintf("u%d", i), "你好", false, false))
	}
	if _, err := ch.WaitSent(ctx, users); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	for _, out := range replies(ch.Sent()) {
		if out.Text != "答：你好" {
			t.Fatalf("a user got %q, want the answer", out.Text)
		}
	}
	if n := h.Count(`SELECT count(*) FROM runs WHERE stop_reason <> 'finished'`); n != 0 {
		t.Fatalf("%d runs did not finish", n)
	}
	if n := h.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.process_inbound' AND attempt > 1`); n != 0 {
		t.Fatalf("%d jobs were retried; the storm should be waited out inside the run", n)
	}
	mu.Lock()
	defer mu.Unlock()
	// Each wave of at most `users` calls is followed by a pause of at least
	// the Retry-After, so the first answer comes at least 4 pauses later.
	if wait := firstOK.Sub(first429); wait < 3500*time.Millisecond {
		t.Fatalf("first answer %s after the first 429, want the Retry-After waited out (≥ 4 × 1s)", wait)
	}
}

// Runs waiting on the model hold no connection: with ten times as many
// runs in flight as the pool has connections, the pool of 20 never grows
// past its size, and every message is answered once. (The thousand at once
// of the README are BenchmarkThousandConversations, in make bench: here
// they were three quarters of the package's statements.)
func TestPoolStaysWithinItsSizeWithRunsInFlight(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h := gatewaytest.New(t)
	const n = 200
	var inFlight atomic.Int32
	all, release := make(chan struct{}), make(chan struct{})
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Content: "好的", Hook: func(ctx context.Context) error {
			if inFlight.Add(1) == n {
				close(all)
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}}
	})
	ch := gatewaytest.Channel(2048)
	pool := h.NewPool(20)
	h.ModelYAML = "  max_concurrent: 1000"
	gw := h.StartExtra("worker:\n  agent_concurrency: 1000\n  processing_hint_after: 10m\n",
		gateway.Deps{Pool: pool, Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 180*time.Second)

	var peak atomic.Int32
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if c := pool.Stat().TotalConns(); c > peak.Load() {
				peak.Store(c)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()
	sendAll(t, n, 32, func(i int) channels.Inbound {
		u := fmt.Sprintf("user%04d", i)
		return ch.Message("a", "k-"+u, u, u, "我还有几天年假？", false, false)
	}, []*gateway.Gateway{gw})
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatalf("only %d of %d runs reached the model at once", inFlight.Load(), n)
	}
	close(release)
	if _, err := ch.WaitSent(ctx, n); err != nil {
		t.Fatal(err)
	}
	close(stopSampling)
	<-sampled
	if p := peak.Load(); p > 20 {
		t.Fatalf("the pool grew to %d connections, past its 20", p)
	}
	h.WaitIdle(ctx)
	if got := len(replies(ch.Sent())); got != n {
		t.Fatalf("%d replies, want %d", got, n)
	}
	t.Logf("%d runs in flight at once on a pool of 20; peak connections %d", n, peak.Load())
}

// sendAll hands n messages to the gateways in turn, `at` at once, as
// gatewaytest.Platforms' callbacks arrive; it returns each Accept's latency.
func sendAll(t testing.TB, n, at int, msg func(i int) channels.Inbound, gws []*gateway.Gateway) []time.Duration {
	t.Helper()
	lat := make([]time.Duration, n)
	next := atomic.Int64{}
	var wg sync.WaitGroup
	errs := make(chan error, at)
	for range at {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				start := time.Now()
				if _, err := gws[i%len(gws)].Accept(context.Background(), msg(i)); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(start)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return lat
}

// The pool's size no longer depends on agent_concurrency, but deliveries
// hold a connection each: a pool too small for them is refused, naming the key.
func TestTooSmallPoolIsRefused(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	_, err := gateway.New(context.Background(), h.ConfigWith("worker:\n  agent_concurrency: 5000\n"),
		gateway.Deps{Pool: h.NewPool(10), Platforms: gatewaytest.Platforms, Logger: gatewaytest.Logger(t)})
	if err == nil || !strings.Contains(err.Error(), "database.max_conns") {
		t.Fatalf("err = %v, want one naming database.max_conns", err)
	}
	if _, err := gateway.New(context.Background(), h.ConfigWith("worker:\n  agent_concurrency: 5000\n"),
		gateway.Deps{Pool: h.NewPool(20), Platforms: gatewaytest.Platforms, Logger: gatewaytest.Logger(t)}); err != nil {
		t.Fatalf("a pool of 20 with 5000 runs in flight refused: %v", err)
	}
}
