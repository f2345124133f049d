package gateway

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/channels"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/skills"
)

// maxRouteBytes bounds a /v1/route body.
const maxRouteBytes = 1 << 20

// routerChannel is Caller.Channel for calls through the tool-router API.
const routerChannel = "router"

// Defaults of RouterConfig.
const (
	defaultRouteMaxToolCalls  = 16
	defaultRouteRatePerMinute = 60
)

// asyncPathPrefix is where async callbacks arrive; the rest of the path
// is the call's token.
const asyncPathPrefix = "/v1/async/"

// asyncCallback is POST /v1/async/:token: a skill backend's late result.
func (g *Gateway) asyncCallback(c *gin.Context) {
	if err := g.completeAsync(c.Request, c.Param("token")); err != nil {
		g.refuseAPI(c, "async callback refused", err)
		return
	}
	c.Status(http.StatusOK)
}

// route is POST /v1/route, seed 003's tool router: another system runs
// skills through the same executors, as the identity its API key maps to.
// It never takes an identity from the request body.
func (g *Gateway) route(c *gin.Context) {
	if len(g.cfg.Router.APIKeys) == 0 {
		g.refuseAPI(c, "route refused", ErrUnknownAccount)
		return
	}
	key, ok := g.routerKey(c.GetHeader("Authorization"))
	if !ok {
		g.refuseAPI(c, "route refused", ErrUnauthorized)
		return
	}
	rate := cmp.Or(max(g.cfg.Router.RatePerMinute, 0), defaultRouteRatePerMinute)
	if wait, ok := g.routeUse.take(key.Key, rate, g.now()); !ok {
		g.log.Warn("route refused: rate limited", "caller", key.UserID, "rate_per_minute", rate)
		c.Header("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
		c.String(http.StatusTooManyRequests, http.StatusText(http.StatusTooManyRequests))
		return
	}
	req, err := g.routeRequest(c.Request.Body)
	if err != nil {
		g.refuseAPI(c, "route refused", err)
		return
	}
	traceID := newRunID()
	caller := skills.Caller{
		UserID: key.UserID, Name: key.Name, CorpID: key.CorpID,
		Channel: routerChannel, Account: key.Name, TraceID: traceID,
	}
	resp := skills.Route(c.Request.Context(), g.skills.Load(), caller, req)
	g.log.Info("route", "request_id", req.RequestID, "trace_id", traceID, "caller", key.UserID,
		"calls", len(req.ToolCalls), "status", resp.Status)
	c.JSON(http.StatusOK, resp)
}

// routeRequest reads and checks a /v1/route body: bounded in bytes and in
// tool calls, so one request cannot start an unbounded number of calls.
// Errors wrap ErrBadRequest.
func (g *Gateway) routeRequest(r io.Reader) (skills.RouteRequest, error) {
	var req skills.RouteRequest
	body, err := io.ReadAll(io.LimitReader(r, maxRouteBytes+1))
	if err != nil || len(body) > maxRouteBytes {
		return req, fmt.Errorf("%w: body unreadable or over %d bytes", ErrBadRequest, maxRouteBytes)
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return req, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	limit := cmp.Or(max(g.cfg.Router.MaxToolCalls, 0), defaultRouteMaxToolCalls)
	switch {
	case len(req.ToolCalls) == 0:
		return req, errors.Join(ErrBadRequest, errors.New("tool_calls is empty"))
	case len(req.ToolCalls) > limit:
		return req, fmt.Errorf("%w: %d tool calls, at most %d per request", ErrBadRequest, len(req.ToolCalls), limit)
	}
	return req, nil
}

// refuseAPI logs a refused API request once, under its own message, and
// answers its mapped status. The path is logged with its async token
// hidden: until it is used, a token is a live credential for posting a
// result into someone's chat.
func (g *Gateway) refuseAPI(c *gin.Context, msg string, err error) {
	status := channels.HTTPStatus(err)
	g.log.Warn(msg, "path", redactPath(c.Request.URL.Path), "status", status, "err", err)
	c.String(status, http.StatusText(status))
}

// redactPath hides the token of an async callback path.
func redactPath(path string) string {
	if strings.HasPrefix(path, asyncPathPrefix) {
		return asyncPathPrefix + "[REDACTED]"
	}
	return path
}

// routerKey finds the configured key for an Authorization header, comparing
// every key in constant time.
func (g *Gateway) routerKey(header string) (config.RouterKey, bool) {
	return config.BearerKey(header, g.cfg.Router.APIKeys, func(k config.RouterKey) string { return k.Key })
}

// routeLimiter is a token bucket per API key on this replica (router keys,
// and the OpenAI API's requests per minute): a key
// may spend a minute's worth of requests at once, then one per
// 1/ratePerMinute minutes. The zero value is ready to use.
type routeLimiter struct {
	mu      sync.Mutex
	buckets map[string]*routeBucket // by API key
}

type routeBucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// take spends one request of key at now. When none is left it reports how
// long until one is.
func (l *routeLimiter) take(key string, ratePerMinute int, now time.Time) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*routeBucket{}
	}
	capacity, perSecond := float64(ratePerMinute), float64(ratePerMinute)/60
	b, found := l.buckets[key]
	if !found {
		b = &routeBucket{tokens: capacity, at: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens = min(capacity, b.tokens+elapsed*perSecond)
		b.at = now
	}
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) / perSecond * float64(time.Second)), false
	}
	b.tokens--
	return 0, true
}
