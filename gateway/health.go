package gateway

import (
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/gateway/ops"
)

// Connection states /readyz reports, per channel/account.
const (
	connRunning  = "running"  // a session is up (or dialling)
	connRetrying = "retrying" // the last session failed; the next dials after the backoff
	connHolding  = "holding"  // one-per-bot connection, held by this replica
	connStandby  = "standby"  // one-per-bot connection, held elsewhere or waiting for the lease
)

// connStates are the long connections' states on this replica.
type connStates struct {
	mu sync.Mutex
	m  map[string]string // "channel/account" → state
}

func (s *connStates) set(channel, account, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[channel+"/"+account] = state
}

func (s *connStates) snapshot() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

// Drain makes /readyz answer 503 so the load balancer stops sending this
// replica new requests; call it on SIGTERM before shutting the server down.
func (g *Gateway) Drain() { g.draining.Store(true) }

// opsRoutes adds the health checks (gateway/ops), which stay on the public
// listener for the load balancer.
func (g *Gateway) opsRoutes(r *gin.Engine) {
	ops.Health{Pool: g.pool, Draining: g.draining.Load, Connections: g.connStates.snapshot}.Routes(r)
}
