package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"sort"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/web"
)

// Version is the running build, set by cmd/hermes.
var Version = "dev"

func (g *Gateway) routes() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery())
	g.opsRoutes(r) // metrics middleware first, then /healthz, /readyz, /metrics, /v1/chat/completions
	r.GET("/", gin.WrapH(web.StatusHandler(g.status)))
	// Platform callbacks: each channel's own routes.
	for _, rt := range g.channelRoutes() {
		r.Handle(rt.Method, rt.Path, gin.WrapF(rt.Handler))
	}
	// Skill backends and other systems.
	r.POST("/v1/async/:token", g.asyncCallback)
	r.POST("/v1/route", g.route)
	// The operator's console (web/console), behind its own login.
	r.Any("/console/*path", gin.WrapH(g.consoleHandler()))
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

// newRunID returns a random 128-bit id in hex: the run's trace id, also sent
// to skill backends as X-Request-ID.
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
