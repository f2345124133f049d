package gateway

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/gateway/store"
)

// Health: /healthz says the process serves HTTP (always 200 while it
// does: a liveness probe restarts only a wedged process); /readyz says this
// replica should get traffic: Postgres answers, every migration is
// applied, and it is not shutting down. Long connections are reported by
// /readyz but do not fail it: a platform's socket being down is no reason
// to take the other platforms' callbacks away from this replica.

// readyTimeout bounds the checks of one /readyz.
const readyTimeout = 2 * time.Second

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

func (g *Gateway) healthz(c *gin.Context) { c.String(http.StatusOK, "ok") }

// readiness is the body of /readyz.
type readiness struct {
	Ready       bool              `json:"ready"`
	Checks      []readyCheck      `json:"checks"`
	Connections map[string]string `json:"connections,omitempty"`
}

type readyCheck struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

func (g *Gateway) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
	defer cancel()
	r := readiness{Ready: true, Connections: g.connStates.snapshot()}
	add := func(name string, err error) {
		ck := readyCheck{Name: name, OK: err == nil}
		if err != nil {
			ck.Error = err.Error()
			r.Ready = false
		}
		r.Checks = append(r.Checks, ck)
	}
	add("postgres", g.pool.Ping(ctx))
	pending, err := store.MigrationsPending(ctx, g.pool)
	if err == nil && pending {
		err = errMigrationsPending
	}
	add("migrations", err)
	if g.draining.Load() {
		add("serving", errDraining)
	}
	sort.Slice(r.Checks, func(i, j int) bool { return r.Checks[i].Name < r.Checks[j].Name })
	status := http.StatusOK
	if !r.Ready {
		status = http.StatusServiceUnavailable
	}
	c.JSON(status, r)
}

var (
	errMigrationsPending = errors.New("migrations pending: run hermes migrate")
	errDraining          = errors.New("shutting down")
)

// opsRoutes adds the health checks, which stay on the public listener for
// the load balancer, and the OpenAI-compatible routes.
func (g *Gateway) opsRoutes(r *gin.Engine) {
	r.GET("/healthz", g.healthz)
	r.GET("/readyz", g.readyz)
	r.POST("/v1/chat/completions", g.chatCompletions)
	r.GET("/v1/models", g.listModels)
}
