package agent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
)

const testModel = "test-model"

// newModel starts a fake endpoint and a real go-openai client for it.
func newModel(t *testing.T) (*openaitest.Server, agent.Model) {
	t.Helper()
	srv := openaitest.NewServer(t)
	return srv, agent.NewOpenAIModel(agent.OpenAIConfig{BaseURL: srv.URL(), Model: testModel})
}

// fakeClock advances one second per reading, so every latency is 1s.
func fakeClock() func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

// noSleep makes model retries immediate; tests that check the delays
// record them instead.
func noSleep(context.Context, time.Duration) error { return nil }

func testOptions() agent.Options {
	return agent.Options{Now: fakeClock(), Logger: slog.New(slog.DiscardHandler), Sleep: noSleep}
}

// callLog records tool calls across tools, in order.
type callLog struct {
	mu    sync.Mutex
	calls []string // "name args"
}

func (l *callLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, s)
}

func (l *callLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// fakeTool is a skills.Tool with a fixed answer, or one computed by call.
type fakeTool struct {
	name, params string
	out          string
	contentType  string
	err          error
	log          *callLog
	write        bool                                                                   // not read-only; fakes are read-only by default
	edit         func(*skills.Spec)                                                     // changes the spec: triggers, templates...
	call         func(ctx context.Context, args json.RawMessage) (skills.Result, error) // replaces out and err
}

func (f *fakeTool) Spec() skills.Spec {
	p := f.params
	if p == "" {
		p = `{"type":"object","properties":{}}`
	}
	spec := skills.Spec{Name: f.name, Description: "test tool " + f.name, Parameters: json.RawMessage(p), ReadOnly: !f.write}
	if f.edit != nil {
		f.edit(&spec)
	}
	return spec
}

func (f *fakeTool) Call(ctx context.Context, args json.RawMessage) (skills.Result, error) {
	if f.log != nil {
		f.log.add(f.name + " " + string(args))
	}
	if f.call != nil {
		return f.call(ctx, args)
	}
	if f.err != nil {
		return skills.Result{}, f.err
	}
	return skills.Result{Status: 200, ContentType: f.contentType, Body: []byte(f.out)}, nil
}

// hrTools are the sample skills' shapes with canned answers.
func hrTools(log *callLog) []skills.Tool {
	return []skills.Tool{
		&fakeTool{name: "hr_leave_balance", out: `{"remaining_days":5}`, log: log},
		&fakeTool{name: "hr_policy_search", out: "年假可结转至次年 3 月 31 日。", log: log,
			params: `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`},
		&fakeTool{name: "it_ticket_create", out: `{"ticket_id":"INC-1004"}`, log: log, write: true,
			params: `{"type":"object","properties":{"title":{"type":"string"},"description":{"type":"string"}},"required":["title","description"]}`},
		&fakeTool{name: "it_ticket_status", out: `{"status":"处理中"}`, log: log,
			params: `{"type":"object","properties":{"ticket_id":{"type":"string"}},"required":["ticket_id"]}`},
	}
}

func testTurn(text string, tools []skills.Tool) agent.Turn {
	return agent.Turn{SessionID: "s1", RunID: "r1", SystemPrompt: "你是公司的 HR/IT 助手。", UserText: text, Tools: tools}
}

func stepKinds(steps []agent.Step) []string {
	var kinds []string
	for _, s := range steps {
		kinds = append(kinds, s.Kind+":"+s.Tool)
	}
	return kinds
}

// toolNames lists the tools of a request, without the built-in finish.
func toolNames(req openai.ChatCompletionRequest) []string {
	var names []string
	for _, t := range req.Tools {
		if t.Function.Name != "finish" {
			names = append(names, t.Function.Name)
		}
	}
	return names
}

// lastMessage is the last message of a request.
func lastMessage(req openai.ChatCompletionRequest) openai.ChatCompletionMessage {
	return req.Messages[len(req.Messages)-1]
}

// call is a scripted reply with one tool call.
func call(name, args string) openaitest.Reply {
	return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall(name, args)}}
}

// answer is a scripted text reply.
func answer(text string) openaitest.Reply { return openaitest.Reply{Content: text} }

func hasDelta(s agent.Step, part string) bool {
	for _, d := range s.Delta {
		if strings.Contains(d, part) {
			return true
		}
	}
	return false
}

// anyDelta reports whether any step's state delta contains part.
func anyDelta(steps []agent.Step, part string) bool {
	for _, s := range steps {
		if hasDelta(s, part) {
			return true
		}
	}
	return false
}
