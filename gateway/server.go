package gateway

import (
	"net/http"
	"slices"
	"sort"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/web"
)

// Version is the running build, set by cmd/hermes.
var Version = "dev"

// routes are the public listener's: platform callbacks, the APIs for skill
// backends and clients, /healthz and /readyz; and, unless
// server.admin_listen is set, the operators' paths too (adminRoutes).
func (g *Gateway) routes() http.Handler {
	r := g.newEngine()
	g.opsRoutes(r) // /healthz, /readyz
	// Platform callbacks: each channel's own routes.
	for _, rt := range g.channelRoutes() {
		r.Handle(rt.Method, rt.Path, gin.WrapF(rt.Handler))
	}
	admin := gin.IRouter(gin.New()) // served by AdminHandler instead
	if g.cfg.Server.AdminListen == "" {
		g.adminRoutes(r)
		admin = r
	}
	g.featureRoutes(r, admin)
	return r
}

// AdminHandler serves the operators' paths (the console, /metrics, the
// status page) on server.admin_listen; nil when that is not set, and they
// are on Handler.
func (g *Gateway) AdminHandler() http.Handler {
	if g.cfg.Server.AdminListen == "" {
		return nil
	}
	r := g.newEngine()
	g.adminRoutes(r)
	g.featureRoutes(gin.New(), r) // the public ones are served by Handler
	return r
}

// adminRoutes are what only operators need, and what tells an outsider
// most about this deployment: the console (behind its login, but its login
// is a place to guess passwords), /metrics (channel and account names,
// skills, queue depths; Prometheus scrapes it from inside) and the status
// page (callback paths and skill names).
func (g *Gateway) adminRoutes(r *gin.Engine) {
	if g.metrics != nil {
		r.GET("/metrics", gin.WrapH(g.metrics.Handler()))
	}
	r.GET("/", gin.WrapH(web.StatusHandler(g.status)))
	// The operator's console (web/console), behind its own login.
	r.Any("/console/*path", gin.WrapH(g.consoleHandler()))
}

// newEngine is an empty router with panic recovery and, when metrics are
// on, the request metrics middleware (before any route).
func (g *Gateway) newEngine() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery())
	if g.metrics != nil {
		r.Use(g.metrics.Middleware())
	}
	return r
}

// status is what the status page shows: no secrets, only names and paths.
func (g *Gateway) status() web.Status {
	st := web.Status{Version: Version}
	for _, r := range g.channelRoutes() {
		if r.Method == http.MethodPost && !slices.Contains(st.Callbacks, r.Path) {
			st.Callbacks = append(st.Callbacks, r.Path)
		}
	}
	sort.Strings(st.Callbacks)
	for _, s := range g.skills.Load().Skills() {
		st.Skills = append(st.Skills, s.Name)
	}
	return st
}

// channelRoutes are the callback endpoints of every channel that receives
// over HTTP, each handing messages to this gateway.
func (g *Gateway) channelRoutes() []channels.Route {
	var routes []channels.Route
	for _, ch := range g.channels {
		if hr, ok := ch.(channels.HTTPReceiver); ok {
			routes = append(routes, hr.Routes(g)...)
		}
	}
	return routes
}
