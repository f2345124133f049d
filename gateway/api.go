package gateway

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/skills"
)

// maxRouteBytes bounds a /v1/route body.
const maxRouteBytes = 1 << 20

// routerChannel is Caller.Channel for calls through the tool-router API.
const routerChannel = "router"

// asyncCallback is POST /v1/async/:token: a skill backend's late result.
func (g *Gateway) asyncCallback(c *gin.Context) {
	if err := g.completeAsync(c.Request, c.Param("token")); err != nil {
		g.fail(c, err)
		return
	}
	c.Status(http.StatusOK)
}

// route is POST /v1/route, seed 003's tool router: another system runs
// skills through the same executors, as the identity its API key maps to.
// It never takes an identity from the request body.
func (g *Gateway) route(c *gin.Context) {
	if len(g.cfg.Router.APIKeys) == 0 {
		g.fail(c, ErrUnknownAccount)
		return
	}
	key, ok := g.routerKey(c.GetHeader("Authorization"))
	if !ok {
		g.fail(c, ErrUnauthorized)
		return
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxRouteBytes+1))
	if err != nil || len(body) > maxRouteBytes {
		g.fail(c, fmt.Errorf("%w: body unreadable or over %d bytes", ErrBadRequest, maxRouteBytes))
		return
	}
	var req skills.RouteRequest
	if err := json.Unmarshal(body, &req); err != nil {
		g.fail(c, fmt.Errorf("%w: %w", ErrBadRequest, err))
		return
	}
	if len(req.ToolCalls) == 0 {
		g.fail(c, errors.Join(ErrBadRequest, errors.New("tool_calls is empty")))
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

// routerKey finds the configured key for an Authorization header, comparing
// every key in constant time.
func (g *Gateway) routerKey(header string) (RouterKey, bool) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || token == "" {
		return RouterKey{}, false
	}
	var found RouterKey
	match := 0
	for _, k := range g.cfg.Router.APIKeys {
		if subtle.ConstantTimeCompare([]byte(token), []byte(k.Key)) == 1 {
			found, match = k, 1
		}
	}
	return found, match == 1
}
