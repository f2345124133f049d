package modellimit

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestMain waits, after the tests, until their databases are dropped.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// replicaConns is each test replica's pool: a replica's limiter shares its
// pool with everything else, so a few connections must do.
const replicaConns = 4

// replicaPools are n pools on one fresh database, one per replica.
func replicaPools(t testing.TB, n int) []*pgxpool.Pool { return tracedPools(t, n, nil) }

// tracedPools are replicaPools whose queries go to tracer (nil: none).
func tracedPools(t testing.TB, n int, tracer pgx.QueryTracer) []*pgxpool.Pool {
	t.Helper()
	url := storetest.URL(t)
	pools := make([]*pgxpool.Pool, n)
	for i := range pools {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = replicaConns
		cfg.ConnConfig.Tracer = tracer
		if pools[i], err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pools[i].Close)
	}
	return pools
}

// modelConfig is a model section as ParseConfig leaves it, for the
// endpoint at baseURL.
func modelConfig(scope, baseURL string) config.ModelConfig {
	return config.ModelConfig{Provider: "openai", BaseURL: baseURL, Name: "test-model", Timeout: 10 * time.Second,
		LimitsScope: scope, MaxConcurrent: 100, MaxRetryAfter: 30 * time.Second, QueuedHintAfter: 3 * time.Second}
}

// newClock is a settable time for the shared gates of a test.
func newClock() *chantest.Clock {
	return chantest.NewClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
}

// sharedGates are the gates of replicas, one per pool, all of cfg and
// reading now.
func sharedGates(cfg config.ModelConfig, pools []*pgxpool.Pool, now func() time.Time) []*sharedGate {
	gates := make([]*sharedGate, len(pools))
	for i, p := range pools {
		gates[i] = newSharedGate(cfg, p, now)
	}
	return gates
}

// claimOnce is one claim with the model's rows made.
func claimOnce(t testing.TB, g *sharedGate, held bool, holder int64, estimate int) claimed {
	t.Helper()
	ctx := context.Background()
	if err := g.ensureRows(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := g.claim(ctx, held, holder, estimate)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// peakServer is a model endpoint that counts the calls in it at once.
type peakServer struct {
	*openaitest.Server
	inFlight, peak, calls atomic.Int64
}

// newPeakServer answers every call after hold.
func newPeakServer(t testing.TB, hold time.Duration) *peakServer {
	s := &peakServer{Server: openaitest.NewServer(t)}
	s.SetHandler(func(openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Content: "好的", Hook: func(ctx context.Context) error {
			s.calls.Add(1)
			n := s.inFlight.Add(1)
			defer s.inFlight.Add(-1)
			for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
			}
			t := time.NewTimer(hold)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			return nil
		}}
	})
	return s
}

// openAIModel is the real OpenAI client of cfg, as the gateway builds it.
func openAIModel(cfg config.ModelConfig) agent.Model {
	return agent.NewOpenAIModel(agent.OpenAIConfig{BaseURL: cfg.BaseURL, HTTPClient: HTTPClient(cfg)})
}

// question is a small request.
func question() openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: "test-model",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "你好"}}}
}
