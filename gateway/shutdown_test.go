package gateway_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// The signal (the context Start was given ending, as SIGTERM ends serve's)
// does not cancel a run in flight: Stop lets it finish within its grace, so
// its model call is made once, and its answer is delivered once.
func TestSignalLetsARunningRunFinish(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	m := holdModel(h)
	started, release, calls, cancelled := m.started, m.release, &m.calls, &m.cancelled

	signalCtx, signal := context.WithCancel(context.Background())
	defer signal()
	gw, err := gateway.New(signalCtx, h.Config(), gateway.Deps{Pool: h.Pool, Logger: gatewaytest.Logger(t), Platforms: gatewaytest.Platforms, Features: gatewaytest.NewFeatures()})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(signalCtx); err != nil {
		t.Fatal(err)
	}
	hd := gw.Handler()
	h.Serve(hd)

	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	askUntilModelCalled(t, ctx, h, "7001", started)

	// SIGTERM: serve's context ends, then Stop is given the grace.
	signal()
	stopped := make(chan error, 1)
	go func() {
		grace, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped <- gw.Stop(grace)
	}()
	close(release)
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Stop did not return")
	}
	if n := cancelled.Load(); n != 0 {
		t.Errorf("%d model calls were cancelled by the signal, want 0", n)
	}
	if n := h.Count(`SELECT count(*) FROM runs WHERE error = ''`); n != 1 {
		t.Errorf("%d finished runs after Stop, want 1", n)
	}

	// Whatever the stopped replica had not delivered, the next one does,
	// without asking the model again.
	h.Start(gateway.Deps{})
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if msgs := h.WeComAPI.Messages(); len(msgs) != 1 {
		t.Errorf("%d messages delivered, want 1", len(msgs))
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the model was called %d times, want 1", n)
	}
}

// A run's session lease is renewed while the runs and callbacks hold
// every other pooled connection for longer than the lease: its renewal has
// a connection of its own, so the run is not stopped and its message is
// answered once.
func TestLeaseRenewalHoldsWhenThePoolIsFull(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	m := holdModel(h)
	started, release, calls := m.started, m.release, &m.calls
	h.StartExtra("worker:\n  run_lease: 1s\n", gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	observer, err := pgxpool.New(ctx, h.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(observer.Close)
	askUntilModelCalled(t, ctx, h, "7101", started)

	// Every connection the pool will still give is held.
	var held []*pgxpool.Conn
	for {
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		c, err := h.Pool.Acquire(short)
		cancel()
		if err != nil {
			break
		}
		held = append(held, c)
	}
	releaseHeld := func() {
		for _, c := range held {
			c.Release()
		}
		held = nil
	}
	defer releaseHeld() // also when the wait below fails
	full := time.Now()
	// The lease is renewed past three lease terms after the pool filled.
	gatewaytest.WaitFor(t, gatewaytest.WithTimeout(t, 15*time.Second), func() bool {
		var renewed bool
		err := observer.QueryRow(ctx, `SELECT coalesce(bool_or(lease_expires_at > $1), false) FROM sessions`, full.Add(3*time.Second)).Scan(&renewed)
		return err == nil && renewed
	})
	releaseHeld()
	close(release)
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if n := calls.Load(); n != 1 {
		t.Errorf("the model was called %d times, want 1 (the run was stopped and run again)", n)
	}
	if msgs := h.WeComAPI.Messages(); len(msgs) != 1 {
		t.Errorf("%d messages delivered, want 1", len(msgs))
	}
}

// heldModel answers every call once release is closed; started is closed
// when the first call arrives. A call whose request ends first is counted
// in cancelled.
type heldModel struct {
	started, release chan struct{}
	calls, cancelled atomic.Int32
}

func holdModel(h *gatewaytest.Harness) *heldModel {
	m := &heldModel{started: make(chan struct{}), release: make(chan struct{})}
	h.Model.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Content: "你还有 5 天年假。", Hook: func(ctx context.Context) error {
			if m.calls.Add(1) == 1 {
				close(m.started)
			}
			select {
			case <-m.release:
				return nil
			case <-ctx.Done():
				m.cancelled.Add(1)
				return ctx.Err()
			}
		}}
	})
	return m
}

// askUntilModelCalled posts zhangsan's leave question as message msgID
// and returns once the held model has been called for it.
func askUntilModelCalled(t *testing.T, ctx context.Context, h *gatewaytest.Harness, msgID string, started <-chan struct{}) {
	t.Helper()
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "我还有几天年假？", msgID), time.Now())
	if status, _ := gatewaytest.Post(t, u, body); status != 200 {
		t.Fatalf("callback answered %d", status)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the model was never called")
	}
}
