package agent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
)

// recordHandler keeps log records with their attributes, logger-level ones
// included.
type recordHandler struct {
	mu    *sync.Mutex
	lines *[]map[string]string
	attrs []slog.Attr
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	line := map[string]string{"msg": r.Message}
	for _, a := range h.attrs {
		line[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		line[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.lines = append(*h.lines, line)
	return nil
}

func (h recordHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append(slices.Clone(h.attrs), attrs...)
	return h
}

func (h recordHandler) WithGroup(string) slog.Handler { return h }

func TestRun_TraceAndLogPoints(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("vpn_reset", `{"user":"zhangsan","password":"hunter2","api_key":"sk-1"}`), answer("已重置。"))
	var lines []map[string]string
	opts := testOptions()
	opts.Logger = slog.New(recordHandler{mu: &sync.Mutex{}, lines: &lines})
	tools := []skills.Tool{&fakeTool{name: "vpn_reset", out: `{"ok":true}`, write: true}}

	res, err := agent.Run(context.Background(), m, testTurn("重置 VPN", tools), opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var points []string
	for _, l := range lines {
		if l["session_id"] != "s1" || l["run_id"] != "r1" {
			t.Errorf("log line %q lacks the conversation's ids: %v", l["msg"], l)
		}
		points = append(points, l["msg"])
	}
	want := []string{"agent: input ready", "agent: context built", "agent: model returned", "agent: tool returned",
		"agent: model returned", "agent: stop decided"}
	if !slices.Equal(points, want) {
		t.Errorf("log points = %q, want %q", points, want)
	}
	// Secrets never reach the trace; the trace is JSON for the store.
	tool := res.Steps[1]
	if strings.Contains(tool.Args, "hunter2") || strings.Contains(tool.Args, "sk-1") || !strings.Contains(tool.Args, `"user":"zhangsan"`) {
		t.Errorf("Args = %s, want secrets masked", tool.Args)
	}
	b, err := json.Marshal(res.Steps)
	if err != nil {
		t.Fatalf("steps are not JSON: %v", err)
	}
	var back []agent.Step
	if err := json.Unmarshal(b, &back); err != nil || !slices.EqualFunc(back, res.Steps, func(a, b agent.Step) bool {
		return a.N == b.N && a.Kind == b.Kind && a.Args == b.Args && a.Latency == b.Latency && a.At.Equal(b.At)
	}) {
		t.Errorf("steps do not survive JSON: %v", err)
	}
}

// TestTrace_FailedAttemptsAndUnrunCalls: a retried model call records why
// each failed attempt failed, and a tool call that never ran is placed in
// time like the others (it used to show 0001-01-01).
func TestTrace_FailedAttemptsAndUnrunCalls(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{Status: 503, Content: "overloaded"},
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("no_such_tool", `{}`)}},
		answer("好的"),
	)
	var rec sleepRecorder
	opts := testOptions()
	opts.Sleep = rec.sleep
	res, err := agent.Run(context.Background(), m, testTurn("你好", nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	first := res.Steps[0]
	if first.Attempts != 2 || len(first.FailedAttempts) != 1 || !strings.Contains(first.FailedAttempts[0], "503") {
		t.Errorf("first step attempts %d, failed %q; want the 503 recorded", first.Attempts, first.FailedAttempts)
	}
	for _, s := range res.Steps {
		if s.At.IsZero() {
			t.Errorf("step %d %s %s has no time", s.N, s.Kind, s.Tool)
		}
	}
	if res.Steps[1].Kind != agent.StepTool || res.Steps[1].Tool != "no_such_tool" {
		t.Fatalf("steps = %+v, want the unknown tool's step second", res.Steps)
	}
}
