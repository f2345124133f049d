package modellimit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway/config"
)

// callAll makes perReplica calls at once through each limiter and
// returns how many failed.
func callAll(t *testing.T, ctx context.Context, lims []*Limiter, cfg config.ModelConfig, perReplica int) (failed int64) {
	t.Helper()
	var wg sync.WaitGroup
	var fails atomic.Int64
	for _, l := range lims {
		m := l.Model(openAIModel(cfg), nil)
		for range perReplica {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := m.Chat(ctx, question()); err != nil {
					fails.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	return fails.Load()
}

// Four replicas with shared limits never have more than max_concurrent
// calls at the model together; with per-replica limits they do.
func TestSharedMaxConcurrentAcrossReplicas(t *testing.T) {
	t.Parallel()
	const replicas, perReplica, maxConcurrent = 4, 20, 5
	for _, scope := range []string{config.LimitsShared, config.LimitsReplica} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			srv := newPeakServer(t, 20*time.Millisecond)
			cfg := modelConfig(scope, srv.URL())
			cfg.MaxConcurrent = maxConcurrent
			lims := make([]*Limiter, replicas)
			for i, p := range replicaPools(t, replicas) {
				lims[i] = New(cfg, p)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if failed := callAll(t, ctx, lims, cfg, perReplica); failed > 0 {
				t.Fatalf("%d of %d calls failed", failed, replicas*perReplica)
			}
			peak := srv.peak.Load()
			t.Logf("%s: peak %d calls at once at the model", scope, peak)
			if srv.calls.Load() != replicas*perReplica {
				t.Errorf("model saw %d calls, want %d", srv.calls.Load(), replicas*perReplica)
			}
			if scope == config.LimitsShared && (peak > maxConcurrent || peak < 2) {
				t.Errorf("peak %d calls at once, want 2..%d", peak, maxConcurrent)
			}
			if scope == config.LimitsReplica && peak <= maxConcurrent {
				t.Errorf("per replica: peak %d, want above %d (else this test cannot tell the scopes apart)", peak, maxConcurrent)
			}
		})
	}
}

// Claims of four replicas at one instant, a hundred at once, get exactly
// a bucket's depth of requests and no more; a claim the tokens refuse
// spends no request.
func TestSharedBudgetsAcrossReplicas(t *testing.T) {
	t.Parallel()
	clk := newClock()
	cfg := modelConfig(config.LimitsShared, "http://model.invalid/v1")
	cfg.RequestsPerMinute = 60 // depth 10, one a second
	cfg.TokensPerMinute = 6000 // depth 1000
	gates := sharedGates(cfg, replicaPools(t, 4), clk.Now)
	claimOnce(t, gates[0], true, 0, 1) // makes the rows

	claimAll := func(estimate int) (admitted int64) {
		var wg sync.WaitGroup
		var n atomic.Int64
		for _, g := range gates {
			for range 25 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := g.claim(context.Background(), true, 0, estimate)
					if err != nil {
						t.Error(err)
					}
					if c.admitted {
						n.Add(1)
					}
				}()
			}
		}
		wg.Wait()
		return n.Load()
	}
	// The first claim took 1 request and 1 token: 9 requests are left.
	if got := claimAll(300); got != 3 {
		t.Fatalf("claims of 300 tokens admitted: %d, want 3 (999 tokens left)", got)
	}
	if got := claimAll(1); got != 6 {
		t.Fatalf("claims of 1 token admitted: %d, want 6 (requests left after 4 of 10)", got)
	}
	clk.Set(clk.Now().Add(time.Second))
	if got := claimAll(1); got != 1 {
		t.Fatalf("a second later: %d admitted, want 1", got)
	}
}

// A replica's slot is free again once its lease lapsed without renewal,
// and not before; a renewal moves the lapse.
func TestSharedSlotOfDeadReplicaComesBack(t *testing.T) {
	t.Parallel()
	clk := newClock()
	t0 := clk.Now()
	cfg := modelConfig(config.LimitsShared, "http://model.invalid/v1")
	cfg.MaxConcurrent = 1
	pools := replicaPools(t, 2)
	dead, alive := newSharedGate(cfg, pools[0], clk.Now), newSharedGate(cfg, pools[1], clk.Now)
	if c := claimOnce(t, dead, false, 1, 1); c.slot == nil || !c.admitted {
		t.Fatalf("first claim: %+v", c)
	}
	pools[0].Close() // the replica dies: no release, no renewal

	clk.Set(t0.Add(slotLease - time.Microsecond))
	if c := claimOnce(t, alive, false, 2, 1); c.slot != nil {
		t.Fatalf("slot taken while the dead replica's lease runs: %+v", c)
	}
	clk.Set(t0.Add(slotLease))
	c := claimOnce(t, alive, false, 2, 1)
	if c.slot == nil || !c.admitted {
		t.Fatalf("slot not free once the lease lapsed: %+v", c)
	}

	t.Run("Renewed", func(t *testing.T) {
		renewedAt := t0.Add(slotLease + 20*time.Second)
		clk.Set(renewedAt)
		if err := alive.renew(context.Background(), []int64{2}); err != nil {
			t.Fatal(err)
		}
		other := newSharedGate(cfg, pools[1], clk.Now)
		clk.Set(t0.Add(2*slotLease + time.Second)) // the lease before the renewal lapsed
		if c := claimOnce(t, other, false, 3, 1); c.slot != nil {
			t.Fatalf("renewed slot taken: %+v", c)
		}
		clk.Set(renewedAt.Add(slotLease))
		if c := claimOnce(t, other, false, 3, 1); c.slot == nil {
			t.Fatalf("slot not free once the renewed lease lapsed: %+v", c)
		}
	})
}

// While a call runs, its replica renews its slot's lease; once no call
// runs, it stops.
func TestSharedSlotRenewedWhileCallRuns(t *testing.T) {
	t.Parallel()
	clk := newClock()
	t0 := clk.Now()
	cfg := modelConfig(config.LimitsShared, "http://model.invalid/v1")
	cfg.MaxConcurrent = 1
	pools := replicaPools(t, 2)
	g, other := newSharedGate(cfg, pools[0], clk.Now), newSharedGate(cfg, pools[1], clk.Now)
	g.every = time.Millisecond
	release, err := g.acquire(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(slotLease / 2))
	want := t0.Add(slotLease / 2).Add(slotLease)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var expires time.Time
		if err := pools[1].QueryRow(context.Background(), `SELECT expires_at FROM model_slots WHERE key = $1 AND slot = 0`, g.key).Scan(&expires); err != nil {
			t.Fatal(err)
		}
		if expires.Equal(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease expires at %s, want it renewed to %s", expires, want)
		}
		time.Sleep(time.Millisecond) // polling the database for the renewal, not waiting for it
	}
	clk.Set(t0.Add(slotLease))
	if c := claimOnce(t, other, false, 2, 1); c.slot != nil {
		t.Fatalf("the running call's slot was taken: %+v", c)
	}
	release(1, 0)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		renewing := g.renewing
		g.mu.Unlock()
		if !renewing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("still renewing with no call running")
		}
	}
}

// A call waiting for a slot, or for the budget while holding one, ends
// with its ctx, and leaves neither a slot nor its replica's turn behind.
func TestSharedWaitEndsWithCtx(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t)
	cfg := modelConfig(config.LimitsShared, srv.URL())
	cfg.MaxConcurrent = 1
	cfg.RequestsPerMinute = 6 // depth 1: the second call waits 10 s for the budget
	cfg.QueuedHintAfter = time.Millisecond
	pools := replicaPools(t, 2)
	holder, waiter := New(cfg, pools[0]), New(cfg, pools[1])

	// waitThenCancel calls through l and cancels once the call queues.
	waitThenCancel := func(l *Limiter) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m := l.Model(openAIModel(cfg), func(waiting bool) {
			if waiting {
				cancel()
			}
		})
		_, err := m.Chat(ctx, question())
		return err
	}

	t.Run("ForSlot", func(t *testing.T) {
		release, err := holder.gate.acquire(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := waitThenCancel(waiter); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("model saw %d calls, want 0", n)
		}
		release(1, 0)
	})
	t.Run("ForBudget", func(t *testing.T) {
		// The holder's call spent the only request of the bucket; the
		// waiter gets the slot and waits for the budget, holding it.
		if err := waitThenCancel(waiter); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		g := waiter.gate.(*sharedGate)
		if c := claimOnce(t, g, false, 7, 1); c.slot == nil {
			t.Fatalf("the cancelled call kept its slot: %+v", c)
		}
		select {
		case g.turn <- struct{}{}:
		default:
			t.Fatal("the cancelled call kept its replica's turn")
		}
	})
}

// A 429 with Retry-After at one replica holds every replica's calls.
func TestShared429PausesEveryReplica(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(t)
	srv.Script(openaitest.Reply{Status: 429, Content: "rate limited", Header: map[string][]string{"Retry-After": {"7"}}})
	clk := newClock()
	cfg := modelConfig(config.LimitsShared, srv.URL())
	pools := replicaPools(t, 2)
	gates := sharedGates(cfg, pools, clk.Now)
	_, err := (&Limiter{gate: gates[0], maxPause: cfg.MaxRetryAfter}).Model(openAIModel(cfg), nil).Chat(context.Background(), question())
	var ra *agent.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 7*time.Second {
		t.Fatalf("err = %v, want a RetryAfterError of 7s", err)
	}
	c := claimOnce(t, gates[1], false, 1, 1)
	if c.admitted {
		t.Fatal("the other replica's call started during the pause")
	}
	if w := c.budgetWait(gates[1], 1, clk.Now()); w != 7*time.Second {
		t.Fatalf("the other replica would wait %s, want 7s", w)
	}
	clk.Set(clk.Now().Add(7 * time.Second))
	if c := claimOnce(t, gates[1], true, 1, 1); !c.admitted {
		t.Fatalf("not admitted after the pause: %+v", c)
	}
}

// The tokens a call used beyond its estimate count against every
// replica's next calls.
func TestSharedTokensSettled(t *testing.T) {
	t.Parallel()
	clk := newClock()
	cfg := modelConfig(config.LimitsShared, "http://model.invalid/v1")
	cfg.TokensPerMinute = 600 // depth 100, a token per 100 ms
	gates := sharedGates(cfg, replicaPools(t, 2), clk.Now)
	release, err := gates[0].acquire(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	release(100, 0) // 90 more than estimated: the bucket is empty
	c := claimOnce(t, gates[1], false, 1, 1)
	if c.admitted {
		t.Fatal("admitted with the bucket spent")
	}
	if w := c.budgetWait(gates[1], 1, clk.Now()); w != 100*time.Millisecond {
		t.Fatalf("wait %s, want 100ms (one token)", w)
	}
}

func TestSharedWithoutDatabase(t *testing.T) {
	t.Parallel()
	l := New(modelConfig(config.LimitsShared, "http://model.invalid/v1"), nil)
	if _, err := l.Model(agent.OfflineModel{}, nil).Chat(context.Background(), question()); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("err = %v, want ErrNoDatabase", err)
	}
}

func TestLimitsConfig(t *testing.T) {
	t.Parallel()
	base := "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"
	noEnv := func(string) (string, bool) { return "", false }
	for _, c := range []struct{ name, yaml, want string }{
		{"UnknownScope", base + "  limits_scope: cluster\n", "model.limits_scope: must be replica or shared"},
		{"TooManySharedSlots", base + "  limits_scope: shared\n  max_concurrent: 20000\n", "model.max_concurrent"},
		{"NegativeTokens", base + "  tokens_per_minute: -5\n", "model.tokens_per_minute"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := config.ParseConfig([]byte(c.yaml), noEnv); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	for yaml, want := range map[string]string{base: config.LimitsReplica, base + "  limits_scope: shared\n": config.LimitsShared} {
		cfg, err := config.ParseConfig([]byte(yaml), noEnv)
		if err != nil || cfg.Model.LimitsScope != want {
			t.Errorf("limits_scope = %q, %v; want %q", cfg.Model.LimitsScope, err, want)
		}
	}
}

// Four replicas with a shared requests_per_minute start no more calls
// together than its bucket's depth plus its refill.
func TestSharedRequestsPerMinuteAcrossReplicas(t *testing.T) {
	t.Parallel()
	const replicas, perReplica = 4, 10
	srv := newPeakServer(t, time.Millisecond)
	cfg := modelConfig(config.LimitsShared, srv.URL())
	cfg.RequestsPerMinute = 120 // depth 20, then one per 500 ms
	lims := make([]*Limiter, replicas)
	for i, p := range replicaPools(t, replicas) {
		lims[i] = New(cfg, p)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	failed := callAll(t, ctx, lims, cfg, perReplica)
	elapsed := time.Since(start)
	calls := srv.calls.Load()
	limit := int64(20 + 1 + elapsed/(500*time.Millisecond))
	t.Logf("%d calls in %s (%d timed out waiting), at most %d allowed", calls, elapsed, failed, limit)
	if calls < 20 || calls > limit {
		t.Fatalf("model saw %d calls in %s, want 20..%d", calls, elapsed, limit)
	}
}
