package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Statuses of a RouteResponse (seed 003): "failed" means no call
// succeeded; "partial_success" that some did.
const (
	RouteSuccess        = "success"
	RoutePartialSuccess = "partial_success"
	RouteFailed         = "failed"
)

// RouteRequest is the body of seed 003's POST /v1/route: tool calls an
// upstream model adapter wants run for the authenticated caller.
type RouteRequest struct {
	RequestID string      `json:"request_id"` // generated upstream, echoed back
	Intent    string      `json:"intent,omitempty"`
	ToolCalls []RouteCall `json:"tool_calls"`
}

// RouteCall is one tool call. Arguments may be a JSON object or a JSON
// string holding one (OpenAI sends the latter).
type RouteCall struct {
	ToolCallID string          `json:"tool_call_id"` // generated upstream, never by the router
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
}

// RouteResponse answers a RouteRequest; Results are in request order and
// each keeps its own tool_call_id.
type RouteResponse struct {
	RequestID string        `json:"request_id"`
	Status    string        `json:"status"`
	Results   []RouteResult `json:"results"`
}

// RouteResult is the outcome of one call. Content is the backend's answer
// on success, the confirmation prompt for a skill awaiting confirmation, or
// the task as JSON for accepted async work; Error is set on failure.
type RouteResult struct {
	ToolCallID      string `json:"tool_call_id"`
	Content         string `json:"content"`
	ExecutionTimeMS int64  `json:"execution_time_ms"` // the backend's X-Execution-Time when given
	Error           string `json:"error,omitempty"`
}

// Route runs the calls of req for caller through the same executors,
// access checks, retries and breakers as the agent's tools, at most
// Options.MaxParallel at a time. The gateway authenticates the API key and
// maps it to caller; Route never takes an identity from the request.
//
// When req.Intent is set, a call to a skill whose triggers do not match it
// fails (seed 003's match rules). A skill that needs confirmation is not
// run: there is no user to ask on this path. Route itself never fails; an
// empty request answers "success" with no results.
func Route(ctx context.Context, reg *Registry, caller Caller, req RouteRequest) RouteResponse {
	results := make([]RouteResult, len(req.ToolCalls))
	ok := make([]bool, len(req.ToolCalls))
	sem := make(chan struct{}, reg.opts.MaxParallel)
	var wg sync.WaitGroup
	for i, call := range req.ToolCalls {
		// Calls start in request order, at most MaxParallel at a time.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			results[i] = RouteResult{ToolCallID: call.ToolCallID, Error: context.Cause(ctx).Error()}
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i], ok[i] = routeOne(ctx, reg, caller, req.Intent, call)
		})
	}
	wg.Wait()
	succeeded := 0
	for _, o := range ok {
		if o {
			succeeded++
		}
	}
	status := RoutePartialSuccess
	switch succeeded {
	case len(ok):
		status = RouteSuccess
	case 0:
		status = RouteFailed
	}
	return RouteResponse{RequestID: req.RequestID, Status: status, Results: results}
}

func routeOne(ctx context.Context, reg *Registry, caller Caller, intent string, call RouteCall) (RouteResult, bool) {
	out := RouteResult{ToolCallID: call.ToolCallID}
	fail := func(err error) (RouteResult, bool) {
		out.Error = err.Error()
		return out, false
	}
	args, err := routeArguments(call.Arguments)
	if err != nil {
		return fail(fmt.Errorf("skill %s: %w: %v", call.Name, ErrInvalidArguments, err))
	}
	if s, found := reg.byName[call.Name]; found && allowed(s, caller) && intent != "" && !s.Triggers.Match(intent) {
		return fail(fmt.Errorf("no route matches skill %s for this intent", call.Name))
	}
	res, err := reg.Call(ctx, caller, call.Name, args)
	out.ExecutionTimeMS = res.Duration.Milliseconds()
	switch {
	case err != nil:
		return fail(err)
	case res.Confirm != nil:
		out.Content = res.Confirm.Prompt
		return fail(fmt.Errorf("skill %s needs the user's confirmation in chat; it was not run", call.Name))
	case res.Async != nil:
		b, _ := json.Marshal(map[string]string{"task_id": res.Async.TaskID, "status": "accepted"})
		out.Content = string(b)
	default:
		out.Content = string(res.Body)
	}
	return out, true
}

// routeArguments accepts an object, a JSON string holding one, or nothing.
func routeArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if raw[0] == '"' {
		var inner string
		if err := json.Unmarshal(raw, &inner); err != nil {
			return nil, err
		}
		return json.RawMessage(inner), nil
	}
	return raw, nil
}
