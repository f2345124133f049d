package router

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/ratelimit"
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

// route is POST /v1/route, seed 003's tool router: another system runs
// skills through the same executors, as the identity its API key maps to.
// It never takes an identity from the request body.
func (r *Router) route(c *gin.Context) {
	cfg := r.s.Config.Router
	if len(cfg.APIKeys) == 0 {
		r.refuse(c, "route refused", channels.ErrUnknownAccount)
		return
	}
	// Every configured key is compared, in constant time.
	key, ok := config.BearerKey(c.GetHeader("Authorization"), cfg.APIKeys, func(k config.RouterKey) string { return k.Key })
	if !ok {
		r.refuse(c, "route refused", channels.ErrUnauthorized)
		return
	}
	rate := cmp.Or(max(cfg.RatePerMinute, 0), defaultRouteRatePerMinute)
	if wait, ok := r.use.Take(key.Key, rate, r.s.Now()); !ok {
		r.s.Log.Warn("route refused: rate limited", "caller", key.UserID, "rate_per_minute", rate)
		c.Header("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(wait)))
		c.String(http.StatusTooManyRequests, http.StatusText(http.StatusTooManyRequests))
		return
	}
	req, err := r.routeRequest(c.Request.Body)
	if err != nil {
		r.refuse(c, "route refused", err)
		return
	}
	traceID := ops.NewRunID()
	caller := skills.Caller{
		UserID: key.UserID, Name: key.Name, CorpID: key.CorpID,
		Channel: routerChannel, Account: key.Name, TraceID: traceID,
	}
	resp := skills.Route(c.Request.Context(), r.s.Skills.Load(), caller, req)
	r.s.Log.Info("route", "request_id", req.RequestID, "trace_id", traceID, "caller", key.UserID,
		"calls", len(req.ToolCalls), "status", resp.Status)
	c.JSON(http.StatusOK, resp)
}

// routeRequest reads and checks a /v1/route body: bounded in bytes and in
// tool calls, so one request cannot start an unbounded number of calls.
// Errors wrap channels.ErrBadRequest.
func (r *Router) routeRequest(body io.Reader) (skills.RouteRequest, error) {
	var req skills.RouteRequest
	data, err := io.ReadAll(io.LimitReader(body, maxRouteBytes+1))
	if err != nil || len(data) > maxRouteBytes {
		return req, fmt.Errorf("%w: body unreadable or over %d bytes", channels.ErrBadRequest, maxRouteBytes)
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return req, fmt.Errorf("%w: %w", channels.ErrBadRequest, err)
	}
	limit := cmp.Or(max(r.s.Config.Router.MaxToolCalls, 0), defaultRouteMaxToolCalls)
	switch {
	case len(req.ToolCalls) == 0:
		return req, errors.Join(channels.ErrBadRequest, errors.New("tool_calls is empty"))
	case len(req.ToolCalls) > limit:
		return req, fmt.Errorf("%w: %d tool calls, at most %d per request", channels.ErrBadRequest, len(req.ToolCalls), limit)
	}
	return req, nil
}
