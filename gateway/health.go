package gateway

import (
	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/gateway/ops"
)

// Drain makes /readyz answer 503 so the load balancer stops sending this
// replica new requests; call it on SIGTERM before shutting the server down.
func (g *Gateway) Drain() { g.draining.Store(true) }

// opsRoutes adds the health checks (gateway/ops), which stay on the public
// listener for the load balancer.
func (sv *server) opsRoutes(r *gin.Engine) {
	ops.Health{Pool: sv.pool, Draining: sv.draining.Load, Connections: sv.connStates.Snapshot}.Routes(r)
}
