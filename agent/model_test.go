package agent_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
)

// sleepRecorder is an Options.Sleep that returns at once and keeps the
// delays asked for.
type sleepRecorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleepRecorder) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays = append(s.delays, d)
	return nil
}

func TestRun_RetriesWithBackoffOn429(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{Status: 429, Content: "Rate limit reached"},
		openaitest.Reply{Status: 503, Content: "overloaded"},
		answer("你好"),
	)
	var rec sleepRecorder
	opts := testOptions()
	opts.Sleep, opts.Backoff = rec.sleep, 400*time.Millisecond

	res, err := agent.Run(context.Background(), m, testTurn("你好", nil), opts)
	if err != nil || res.Reply != "你好" {
		t.Fatalf("Run = %q, %v; want success on the third attempt", res.Reply, err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("requests = %d, want 3", n)
	}
	if len(rec.delays) != 2 {
		t.Fatalf("delays = %v, want 2", rec.delays)
	}
	// Exponential with jitter: attempt k waits between half and all of
	// Backoff·2^(k-1).
	for i, d := range rec.delays {
		full := opts.Backoff << i
		if d < full/2 || d > full {
			t.Errorf("delay %d = %v, want within [%v, %v]", i+1, d, full/2, full)
		}
	}
	if s := res.Steps[0]; len(res.Steps) != 1 || s.Attempts != 3 || s.Error != "" {
		t.Errorf("steps = %+v, want one model step with 3 attempts", res.Steps)
	}
}

func TestRun_NoRetryOnClientError(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(openaitest.Reply{Status: 400, Content: "bad request"}, answer("never"))
	var rec sleepRecorder
	opts := testOptions()
	opts.Sleep = rec.sleep
	res, err := agent.Run(context.Background(), m, testTurn("你好", nil), opts)
	if err == nil || res.StopReason != agent.StopError || len(srv.Requests()) != 1 || len(rec.delays) != 0 {
		t.Errorf("Run = %q, %v after %d requests; want one attempt and StopError", res.StopReason, err, len(srv.Requests()))
	}
}

func TestRun_StreamsProgressEvents(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_policy_search", `{"query":"年假 结转"}`)},
			Usage: &openai.Usage{PromptTokens: 120, CompletionTokens: 12}},
		openaitest.Reply{Content: "可以结转，有问题找 HR 张三 13812345678。",
			Chunks: []string{"可以结转，", "有问题找 HR 张三 138", "1234", "5678。"}},
	)
	var mu sync.Mutex
	var events []agent.Event
	var log callLog
	opts := testOptions()
	opts.Progress = func(e agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	res, err := agent.Run(context.Background(), m, testTurn("年假能结转吗？", hrTools(&log)), opts)
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q, %v", res.StopReason, err)
	}
	for i, req := range srv.Requests() {
		if !req.Stream || req.StreamOptions == nil || !req.StreamOptions.IncludeUsage {
			t.Errorf("request %d not streamed with usage", i)
		}
	}
	// The tool call was assembled from streamed fragments.
	if got, want := log.all(), []string{`hr_policy_search {"query":"年假 结转"}`}; !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	var kinds []string
	var text strings.Builder
	for _, e := range events {
		if e.Kind == agent.EventModelDelta {
			if strings.Contains(e.Text, "1381234") {
				t.Errorf("delta %q shows the phone number", e.Text)
			}
			text.WriteString(e.Text)
			continue
		}
		kinds = append(kinds, e.Kind+":"+e.Tool)
	}
	if want := []string{"tool_start:hr_policy_search", "tool_done:hr_policy_search"}; !slices.Equal(kinds, want) {
		t.Errorf("events = %q, want %q", kinds, want)
	}
	if want := "可以结转，有问题找 HR 张三 138****5678。"; text.String() != want || res.Reply != want {
		t.Errorf("streamed %q, reply %q; want both %q", text.String(), res.Reply, want)
	}
	if s := res.Steps[0]; s.PromptTokens != 120 || s.CompletionTokens != 12 {
		t.Errorf("first step tokens = %d/%d, want the streamed usage 120/12", s.PromptTokens, s.CompletionTokens)
	}
}
