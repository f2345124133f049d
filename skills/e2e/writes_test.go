package e2e_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

const createArgs = `{"title":"打印机卡纸","description":"3 楼打印机卡纸，清过一次还是卡。"}`

// gate stands in front of the demo backend like a load balancer: it answers
// 503 for the first failures requests to path and records every
// Idempotency-Key it sees there.
type gate struct {
	next     http.Handler
	path     string
	mu       sync.Mutex
	failures int
	keys     []string
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	fail := false
	if r.URL.Path == g.path {
		g.keys = append(g.keys, r.Header.Get(skills.HeaderIdempotencyKey))
		if g.failures > 0 {
			g.failures--
			fail = true
		}
	}
	g.mu.Unlock()
	if fail {
		http.Error(w, `{"error":"upstream unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *gate) seen() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.keys)
}

// samplesBehind loads the sample skills, and extra ones, against handler.
func samplesBehind(t *testing.T, handler http.Handler, extra ...*skills.Skill) *skills.Registry {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	defs, err := skills.LoadDir(skills.SamplesFS())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := skills.NewRegistry(append(defs, extra...), skills.Options{BaseURL: srv.URL,
		Getenv: func(k string) string {
			if k == skills.SampleHRKeyEnv || k == skills.SampleITKeyEnv {
				return string(key)
			}
			return ""
		}})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// createTicket is the model calling the create skill.
var createTicket = openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_ticket_create", createArgs)}}

func runTurn(t *testing.T, model *openaitest.Server, caller skills.Caller, reg *skills.Registry, text string, opts agent.Options) agent.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts.Model, opts.Logger = "scripted", slog.New(slog.DiscardHandler)
	res, err := agent.Run(ctx, agent.NewOpenAIModel(agent.OpenAIConfig{BaseURL: model.URL(), Model: "scripted"}), agent.Turn{
		RunID: caller.TraceID, UserText: text, Tools: reg.ToolsFor(caller),
	}, opts)
	if err != nil {
		t.Fatalf("Run: %v (stop %s)", err, res.StopReason)
	}
	return res
}

// ticketsCreated counts the backend's answers that created a ticket.
func ticketsCreated(b *demobackend.Backend) int {
	n := 0
	for _, c := range b.Calls() {
		if c.Path == "/it/tickets" && c.Status == http.StatusCreated {
			n++
		}
	}
	return n
}

// TestRepeatedCreateMakesOneTicket: the model calls the create skill, then
// the same call again "to be sure". The second call returns the first
// result to the model; the backend sees one request.
func TestRepeatedCreateMakesOneTicket(t *testing.T) {
	backend := demobackend.New(key, nil)
	reg := samplesBehind(t, backend)
	model := openaitest.NewServer(t)
	model.Script(
		createTicket,
		createTicket,
		openaitest.Reply{Content: "已为你创建工单 INC-1004。"},
	)
	caller := zhangsan
	caller.Origin = 41
	res := runTurn(t, model, caller, reg, "打印机又卡纸了，帮我报个修", agent.Options{})

	if res.StopReason != agent.StopFinished {
		t.Fatalf("stop %q: %s", res.StopReason, res.Reply)
	}
	if n := ticketsCreated(backend); n != 1 || len(backend.Calls()) != 1 {
		t.Errorf("backend calls %d, tickets created %d; want one", len(backend.Calls()), n)
	}
	third := model.Requests()[2].Messages
	if obs := third[len(third)-1].Content; !strings.HasPrefix(obs, "already done:") || !strings.Contains(obs, "INC-1004") {
		t.Errorf("repeat observation = %q, want the earlier result marked already done", obs)
	}
	if k := backend.Calls()[0].IdempotencyKey; len(k) != 32 {
		t.Errorf("Idempotency-Key = %q, want a 32-hex-digit key on a write", k)
	}
}

// TestRunAgainAfterCrashMakesOneTicket: the job of one message runs twice
// (the worker died after the backend answered). Each run creates the
// ticket once; the Idempotency-Key, derived from the message and the call,
// lets the backend drop the second.
func TestRunAgainAfterCrashMakesOneTicket(t *testing.T) {
	backend := demobackend.New(key, nil)
	reg := samplesBehind(t, backend)
	model := openaitest.NewServer(t)
	caller := zhangsan
	caller.Origin = 42
	for run := range 2 {
		model.Script(createTicket, openaitest.Reply{Content: "工单已创建。"})
		caller.TraceID = []string{"run-a", "run-b"}[run] // a new run id, the same message
		runTurn(t, model, caller, reg, "打印机又卡纸了，帮我报个修", agent.Options{})
	}
	calls := backend.Calls()
	if len(calls) != 2 || calls[0].IdempotencyKey != calls[1].IdempotencyKey || ticketsCreated(backend) != 1 {
		t.Errorf("calls %d, keys %q / %q, tickets created %d; want two calls with one key and one ticket",
			len(calls), calls[0].IdempotencyKey, calls[1].IdempotencyKey, ticketsCreated(backend))
	}

	// Another message asking the same is a new request.
	caller.Origin = 43
	model.Script(createTicket, openaitest.Reply{Content: "工单已创建。"})
	runTurn(t, model, caller, reg, "打印机又卡纸了，帮我报个修", agent.Options{})
	if n := ticketsCreated(backend); n != 2 {
		t.Errorf("tickets created %d after a second message, want 2", n)
	}
}

// TestTransientFailureRetried: the backend answers 503 once. The model is
// told it may try once more, does, and the retry runs and succeeds even
// with a deployment allowing no repeats at all; both attempts carry the
// same Idempotency-Key.
func TestTransientFailureRetried(t *testing.T) {
	backend := demobackend.New(key, nil)
	g := &gate{next: backend, path: "/it/tickets", failures: 1}
	reg := samplesBehind(t, g)
	model := openaitest.NewServer(t)
	model.Script(
		createTicket,
		createTicket,
		openaitest.Reply{Content: "已为你创建工单 INC-1004。"},
	)
	caller := zhangsan
	caller.Origin = 44
	res := runTurn(t, model, caller, reg, "打印机又卡纸了，帮我报个修", agent.Options{MaxRepeats: 1})

	if res.StopReason != agent.StopFinished {
		t.Fatalf("stop %q: %s", res.StopReason, res.Reply)
	}
	second := model.Requests()[1].Messages
	if obs := second[len(second)-1].Content; !strings.Contains(obs, "error: unavailable") || !strings.Contains(obs, "try once more") {
		t.Errorf("503 observation = %q", obs)
	}
	if keys := g.seen(); len(keys) != 2 || keys[0] != keys[1] || keys[0] == "" {
		t.Errorf("Idempotency-Keys = %q, want the same key on both attempts", keys)
	}
	if n := ticketsCreated(backend); n != 1 {
		t.Errorf("tickets created %d, want 1", n)
	}
}

// TestPartialAnswerKeepsTheTicket: the run creates a ticket, then runs out
// of steps before answering. The partial answer still gives the ticket
// number and names the skills as users know them.
func TestPartialAnswerKeepsTheTicket(t *testing.T) {
	backend := demobackend.New(key, nil)
	reg := samplesBehind(t, backend)
	model := openaitest.NewServer(t)
	model.Script(
		createTicket,
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_ticket_status", `{"ticket_id":"INC-1004"}`)}},
	)
	caller := zhangsan
	caller.Origin = 45
	res := runTurn(t, model, caller, reg, "打印机又卡纸了，帮我报个修，再看看进度", agent.Options{MaxSteps: 2})

	if res.StopReason != agent.StopMaxSteps {
		t.Fatalf("stop %q, want %q", res.StopReason, agent.StopMaxSteps)
	}
	for _, want := range []string{"INC-1004", "提 IT 工单", "工单进度"} {
		if !strings.Contains(res.Reply, want) {
			t.Errorf("partial reply lacks %q:\n%s", want, res.Reply)
		}
	}
	if strings.Contains(res.Reply, "it_ticket_create") {
		t.Errorf("partial reply names a skill by its id:\n%s", res.Reply)
	}
}
