package ops

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

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

// Health is what /readyz reads of one replica: its database and the
// pipeline's own state.
type Health struct {
	Pool *pgxpool.Pool
	// Draining reports that the replica is shutting down.
	Draining func() bool
	// Connections are its long connections' states by
	// "channel/account" (running, retrying, holding, standby).
	Connections func() map[string]string
}

// Routes mounts /healthz and /readyz.
func (h Health) Routes(r gin.IRouter) {
	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	r.GET("/readyz", h.readyz)
}

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

func (h Health) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
	defer cancel()
	r := readiness{Ready: true, Connections: h.Connections()}
	add := func(name string, err error) {
		ck := readyCheck{Name: name, OK: err == nil}
		if err != nil {
			ck.Error = err.Error()
			r.Ready = false
		}
		r.Checks = append(r.Checks, ck)
	}
	add("postgres", h.Pool.Ping(ctx))
	pending, err := store.MigrationsPending(ctx, h.Pool)
	if err == nil && pending {
		err = errMigrationsPending
	}
	add("migrations", err)
	if h.Draining() {
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
