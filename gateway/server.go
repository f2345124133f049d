package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/web"
)

// Version is the running build, set by cmd/hermes.
var Version = "dev"

// maxCallbackBytes bounds a callback body; WeCom's encrypted XML is a few KiB.
const maxCallbackBytes = 1 << 20

func (g *Gateway) routes() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery())
	r.GET("/healthz", g.healthz)
	r.GET("/", gin.WrapH(web.StatusHandler(g.status)))
	// WeCom self-built apps: one callback URL per configured app.
	r.GET("/wecom/:app/callback", g.wecomVerifyURL)
	r.POST("/wecom/:app/callback", g.wecomCallback)
	// Skill backends and other systems.
	r.POST("/v1/async/:token", g.asyncCallback)
	r.POST("/v1/route", g.route)
	return r
}

// healthzTimeout bounds the database check of /healthz.
const healthzTimeout = 2 * time.Second

// healthz answers 200 when this replica can store callbacks, 503 when it
// cannot reach Postgres (a load balancer should then send WeCom elsewhere).
func (g *Gateway) healthz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), healthzTimeout)
	defer cancel()
	if err := g.pool.Ping(ctx); err != nil {
		c.String(http.StatusServiceUnavailable, "database unreachable")
		return
	}
	c.String(http.StatusOK, "ok")
}

// status is what the status page shows: no secrets, only names and paths.
func (g *Gateway) status() web.Status {
	st := web.Status{Version: Version}
	for name := range g.wecom {
		st.Callbacks = append(st.Callbacks, "/wecom/"+name+"/callback")
	}
	sort.Strings(st.Callbacks)
	for _, s := range g.skills.Load().Skills() {
		st.Skills = append(st.Skills, s.Name)
	}
	return st
}

// wecomVerifyURL answers WeCom's URL verification with the bare plaintext.
func (g *Gateway) wecomVerifyURL(c *gin.Context) {
	app, ok := g.wecom[c.Param("app")]
	if !ok {
		g.fail(c, ErrUnknownAccount)
		return
	}
	echo, err := app.VerifyURL(c.Request.URL.Query())
	if err != nil {
		g.fail(c, err)
		return
	}
	c.Data(http.StatusOK, "text/plain; charset=utf-8", echo)
}

// wecomCallback verifies, decodes and stores a message, then acknowledges
// with an empty 200 ("no passive reply"). It never calls the model or a
// skill: WeCom gives up after 5 s and retries.
func (g *Gateway) wecomCallback(c *gin.Context) {
	app, ok := g.wecom[c.Param("app")]
	if !ok {
		g.fail(c, ErrUnknownAccount)
		return
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxCallbackBytes))
	if err != nil {
		g.fail(c, errors.Join(ErrUnavailable, err))
		return
	}
	in, err := app.ParseCallback(c.Request.URL.Query(), body)
	if err != nil {
		g.fail(c, err)
		return
	}
	if _, err := g.Accept(c.Request.Context(), in); err != nil {
		g.fail(c, err)
		return
	}
	c.Status(http.StatusOK)
}

// fail logs a refused callback once and answers with its mapped status.
func (g *Gateway) fail(c *gin.Context, err error) {
	status := httpStatus(err)
	g.log.Warn("callback refused", "path", c.Request.URL.Path, "status", status, "err", err)
	c.String(status, http.StatusText(status))
}

// newRunID returns a random 128-bit id in hex: the run's trace id, also sent
// to skill backends as X-Request-ID.
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
