package modellimit

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/skills"
)

// replicaGate keeps the limits in this process (model.limits_scope:
// replica): they bind this replica's calls only, so with n replicas the
// model sees up to n times them. It costs no database round trip.
type replicaGate struct {
	slots    chan struct{}
	requests *rate.Limiter // nil: no cap
	tokens   *rate.Limiter // nil: no cap

	mu          sync.Mutex
	pausedUntil time.Time // after a 429, no call starts before this
}

func newReplicaGate(cfg config.ModelConfig) *replicaGate {
	g := &replicaGate{slots: make(chan struct{}, cfg.MaxConcurrent)}
	if cfg.RequestsPerMinute > 0 {
		g.requests = rate.NewLimiter(rate.Limit(float64(cfg.RequestsPerMinute)/60), bucketDepth(cfg.RequestsPerMinute))
	}
	if cfg.TokensPerMinute > 0 {
		g.tokens = rate.NewLimiter(rate.Limit(float64(cfg.TokensPerMinute)/60), bucketDepth(cfg.TokensPerMinute))
	}
	return g
}

// acquire implements gate: a slot first, then the pause and the budgets,
// so that waiting calls queue in order for the slot.
func (g *replicaGate) acquire(ctx context.Context, estimate int) (func(int, time.Duration), error) {
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := g.admit(ctx, estimate); err != nil {
		<-g.slots
		return nil, err
	}
	return func(used int, pause time.Duration) {
		<-g.slots
		if g.tokens != nil && used > estimate {
			// Charge what the call really used; later calls wait for it.
			g.tokens.ReserveN(time.Now(), min(used-estimate, g.tokens.Burst()))
		}
		if pause > 0 {
			g.pause(pause)
		}
	}, nil
}

// admit waits out a 429 pause and the per-minute budgets.
func (g *replicaGate) admit(ctx context.Context, tokens int) error {
	for {
		g.mu.Lock()
		d := time.Until(g.pausedUntil)
		g.mu.Unlock()
		if d <= 0 {
			break
		}
		if skills.Sleep(ctx, d) != nil {
			return ctx.Err()
		}
	}
	if g.requests != nil {
		if err := g.requests.Wait(ctx); err != nil {
			return err
		}
	}
	if g.tokens != nil {
		if err := g.tokens.WaitN(ctx, min(tokens, g.tokens.Burst())); err != nil {
			return err
		}
	}
	return nil
}

// pause holds back every call of this replica for d from now.
func (g *replicaGate) pause(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if until := time.Now().Add(d); until.After(g.pausedUntil) {
		g.pausedUntil = until
	}
}
