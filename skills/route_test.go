package skills_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// orderedBackend makes /slow wait until /fast has answered, so the calls
// finish in the opposite order of the request.
type orderedBackend struct{ fastDone chan struct{} }

func (b *orderedBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/slow":
		<-b.fastDone
		w.Header().Set(skills.HeaderExecutionTime, "127")
		w.Write([]byte(`{"policy":"年假"}`))
	case "/fast":
		w.Write([]byte(`{"balance":5}`))
		close(b.fastDone)
	default:
		http.Error(w, "boom", http.StatusInternalServerError)
	}
}

func routeRegistry(t *testing.T) *skills.Registry {
	t.Helper()
	base := serverURL(t, &orderedBackend{fastDone: make(chan struct{})})
	q := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	defs := []*skills.Skill{
		{Name: "hr_policy_search", Description: "policies", Endpoint: "/slow", Parameters: q,
			Triggers: skills.Triggers{IntentContains: []string{"制度", "年假"}}},
		{Name: "hr_leave_balance", Description: "balance", Endpoint: "/fast"},
		{Name: "it_broken", Description: "always 500", Endpoint: "/broken"},
		{Name: "it_reset", Description: "reset", Endpoint: "/fast", Confirm: &skills.ConfirmPolicy{Required: true}},
	}
	reg, err := skills.NewRegistry(unsigned(defs...), skills.Options{BaseURL: base, MaxParallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestRoute_PartialSuccessOutOfOrder(t *testing.T) {
	reg := routeRegistry(t)
	req := skills.RouteRequest{RequestID: "req_abc123", ToolCalls: []skills.RouteCall{
		// OpenAI sends arguments as a JSON string; others as an object.
		{ToolCallID: "call_slow", Name: "hr_policy_search", Arguments: json.RawMessage(`"{\"q\":\"年假\"}"`)},
		{ToolCallID: "call_fast", Name: "hr_leave_balance", Arguments: json.RawMessage(`{}`)},
		{ToolCallID: "call_broken", Name: "it_broken"},
	}}
	resp := skills.Route(context.Background(), reg, zhang, req)
	if resp.RequestID != "req_abc123" || resp.Status != skills.RoutePartialSuccess || len(resp.Results) != 3 {
		t.Fatalf("resp = %+v", resp)
	}
	want := []struct{ id, content, err string }{
		{"call_slow", `{"policy":"年假"}`, ""},
		{"call_fast", `{"balance":5}`, ""},
		{"call_broken", "", "HTTP 500"},
	}
	for i, w := range want {
		got := resp.Results[i]
		if got.ToolCallID != w.id || got.Content != w.content || (w.err == "") != (got.Error == "") || !strings.Contains(got.Error, w.err) {
			t.Errorf("result %d = %+v, want %+v", i, got, w)
		}
	}
	if resp.Results[0].ExecutionTimeMS != 127 {
		t.Errorf("execution_time_ms = %d, want the backend's X-Execution-Time", resp.Results[0].ExecutionTimeMS)
	}
	b, _ := json.Marshal(resp)
	for _, key := range []string{`"request_id"`, `"tool_call_id"`, `"execution_time_ms"`, `"status":"partial_success"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
}

func TestRoute_Statuses(t *testing.T) {
	reg := routeRegistry(t)
	for _, tc := range []struct {
		name   string
		req    skills.RouteRequest
		status string
		errHas string
	}{
		{"AllFailed", skills.RouteRequest{ToolCalls: []skills.RouteCall{{ToolCallID: "a", Name: "it_broken"}, {ToolCallID: "b", Name: "nope"}}},
			skills.RouteFailed, "is unavailable"},
		{"IntentMismatch", skills.RouteRequest{Intent: "帮我订会议室", ToolCalls: []skills.RouteCall{{ToolCallID: "a", Name: "hr_policy_search"}}},
			skills.RouteFailed, "no route matches"},
		{"ConfirmNotRun", skills.RouteRequest{ToolCalls: []skills.RouteCall{{ToolCallID: "a", Name: "it_reset"}}},
			skills.RouteFailed, "confirmation"},
		{"BadArguments", skills.RouteRequest{ToolCalls: []skills.RouteCall{{ToolCallID: "a", Name: "hr_policy_search", Arguments: json.RawMessage(`"{"`)}}},
			skills.RouteFailed, "invalid arguments"},
		{"Empty", skills.RouteRequest{}, skills.RouteSuccess, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := skills.Route(context.Background(), reg, zhang, tc.req)
			if resp.Status != tc.status {
				t.Errorf("status = %s, want %s (%+v)", resp.Status, tc.status, resp.Results)
			}
			if tc.errHas != "" && !strings.Contains(resp.Results[0].Error, tc.errHas) {
				t.Errorf("error = %q, want %q", resp.Results[0].Error, tc.errHas)
			}
			for i, r := range resp.Results {
				if r.ToolCallID != tc.req.ToolCalls[i].ToolCallID {
					t.Errorf("result %d id %q, want %q", i, r.ToolCallID, tc.req.ToolCalls[i].ToolCallID)
				}
			}
		})
	}
}

// TestRoute_Bounded: with MaxParallel 1 the slow call, which waits for the
// fast one, cannot see it finish before its own timeout; unbounded, both
// would succeed.
func TestRoute_Bounded(t *testing.T) {
	base := serverURL(t, &orderedBackend{fastDone: make(chan struct{})})
	defs := []*skills.Skill{
		{Name: "hr_slow", Description: "waits for fast", Endpoint: "/slow", Timeout: 200 * time.Millisecond},
		{Name: "hr_fast", Description: "fast", Endpoint: "/fast"},
	}
	reg, err := skills.NewRegistry(unsigned(defs...), skills.Options{BaseURL: base, MaxParallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	resp := skills.Route(context.Background(), reg, zhang, skills.RouteRequest{ToolCalls: []skills.RouteCall{
		{ToolCallID: "slow", Name: "hr_slow"}, {ToolCallID: "fast", Name: "hr_fast"},
	}})
	if resp.Status != skills.RoutePartialSuccess || resp.Results[1].Error != "" {
		t.Errorf("resp = %+v, want the slow call to time out alone", resp)
	}
}
