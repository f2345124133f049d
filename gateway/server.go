package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"sync/atomic"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ops"
)

// Version is the running build, set by cmd/hermes.
var Version = "dev"

// server is the HTTP side: the public listener's routes (the platforms'
// callbacks into the inbox, the health checks, the features' public
// routes) and the operators' (/metrics, the features' admin routes).
type server struct {
	cfg        *config.Config
	pool       *pgxpool.Pool
	channels   map[string]channels.Channel
	inbox      channels.Sink // where the callbacks' messages go
	features   []Feature
	metrics    *ops.Metrics
	draining   *atomic.Bool    // shutting down: /readyz answers 503
	connStates *ops.ConnStates // for /readyz
	log        *slog.Logger
}

// routes are the public listener's: platform callbacks, the APIs for skill
// backends and clients, /healthz and /readyz; and, unless
// server.admin_listen is set, the operators' paths too (adminRoutes).
func (sv *server) routes() http.Handler {
	r := sv.newEngine()
	sv.opsRoutes(r) // /healthz, /readyz
	// Platform callbacks: each channel's own routes.
	for _, rt := range sv.channelRoutes() {
		r.Handle(rt.Method, rt.Path, gin.WrapF(rt.Handler))
	}
	admin := gin.IRouter(gin.New()) // served by AdminHandler instead
	if sv.cfg.Server.AdminListen == "" {
		sv.adminRoutes(r)
		admin = r
	}
	sv.featureRoutes(r, admin)
	return r
}

// AdminHandler serves the operators' paths (the console, /metrics, the
// status page) on server.admin_listen; nil when that is not set, and they
// are on Handler.
func (g *Gateway) AdminHandler() http.Handler { return g.server.adminHandler() }

func (sv *server) adminHandler() http.Handler {
	if sv.cfg.Server.AdminListen == "" {
		return nil
	}
	r := sv.newEngine()
	sv.adminRoutes(r)
	sv.featureRoutes(gin.New(), r) // the public ones are served by Handler
	return r
}

// adminRoutes are what only operators need, and what tells an outsider
// most about this deployment: /metrics (channel and account names,
// skills, queue depths; Prometheus scrapes it from inside), and the
// features' admin routes: the console (gateway/admin; behind its login,
// but its login is a place to guess passwords) and the status page
// (callback paths and skill names).
func (sv *server) adminRoutes(r *gin.Engine) {
	if sv.metrics != nil {
		r.GET("/metrics", gin.WrapH(sv.metrics.Handler()))
	}
}

// newEngine is an empty router with panic recovery and, when metrics are
// on, the request metrics middleware (before any route).
func (sv *server) newEngine() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// A handler's panic (a caller's request driving code into a state it
	// does not handle) costs that request a 500, logged with its stack
	// and counted like a connection's (channel "http", the route).
	r.Use(gin.CustomRecoveryWithWriter(io.Discard, func(c *gin.Context, v any) {
		sv.log.Error("panic serving a request; answered 500", "route", c.FullPath(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if sv.metrics != nil {
			sv.metrics.Panicked("http", c.FullPath())
		}
		c.AbortWithStatus(http.StatusInternalServerError)
	}))
	if sv.metrics != nil {
		r.Use(sv.metrics.Middleware())
	}
	return r
}

// callbackPaths are the paths of routes that take callbacks (POST), sorted
// and each once: what the status page lists.
func callbackPaths(routes []channels.Route) []string {
	var paths []string
	for _, r := range routes {
		if r.Method == http.MethodPost {
			paths = append(paths, r.Path)
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// channelRoutes are the callback endpoints of every channel that receives
// over HTTP, each handing messages to this gateway.
func (sv *server) channelRoutes() []channels.Route {
	var routes []channels.Route
	for _, ch := range sv.channels {
		if hr, ok := ch.(channels.HTTPReceiver); ok {
			routes = append(routes, hr.Routes(sv.inbox)...)
		}
	}
	return routes
}
