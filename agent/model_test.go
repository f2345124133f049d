package agent_test

import (
	"context"
	"fmt"
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

// A 429 is the endpoint asking to wait, not failing: it is retried until
// the run's deadline without counting against ModelAttempts, so a burst of
// them longer than ModelAttempts slows the answer down and does not fail it.
func TestRun_RateLimitNotCountedAsAFailure(t *testing.T) {
	srv, m := newModel(t)
	var replies []openaitest.Reply
	for range agent.DefaultModelAttempts + 2 {
		replies = append(replies, openaitest.Reply{Status: 429, Content: "Rate limit reached"})
	}
	srv.Script(append(replies, answer("你好"))...)
	var rec sleepRecorder
	opts := testOptions()
	opts.Sleep = rec.sleep
	res, err := agent.Run(context.Background(), m, testTurn("你好", nil), opts)
	if err != nil || res.Reply != "你好" {
		t.Fatalf("Run = %q, %v; want the answer after the 429s", res.Reply, err)
	}
	if s := res.Steps[0]; s.Attempts != agent.DefaultModelAttempts+3 || len(rec.delays) != agent.DefaultModelAttempts+2 {
		t.Fatalf("attempts %d, delays %v; want every 429 retried", s.Attempts, rec.delays)
	}
}

// RateLimited is the one test of a 429 the agent and the gateway's limiter
// share: an exhausted quota is no wait away.
func TestRateLimited(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&openai.APIError{HTTPStatusCode: 429, Message: "Rate limit reached"}, true},
		{fmt.Errorf("step 1: %w", &openai.RequestError{HTTPStatusCode: 429}), true},
		{&agent.RetryAfterError{Err: &openai.APIError{HTTPStatusCode: 429}, After: time.Second}, true},
		{&openai.APIError{HTTPStatusCode: 429, Code: "insufficient_quota"}, false},
		{&openai.APIError{HTTPStatusCode: 503}, false},
		{context.DeadlineExceeded, false},
		{nil, false},
	} {
		if got := agent.RateLimited(tc.err); got != tc.want {
			t.Errorf("RateLimited(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// retryAfterModel is a model that reads Retry-After as the gateway's
// limiter does: its 429 says how long to wait.
type retryAfterModel struct {
	agent.Model
	after time.Duration
}

func (m retryAfterModel) Chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	resp, err := m.Model.Chat(ctx, req)
	if agent.RateLimited(err) {
		return resp, &agent.RetryAfterError{Err: err, After: m.after}
	}
	return resp, err
}

// The run waits at least the Retry-After a 429 carries: one wait, the
// endpoint's, not the backoff's and then another.
func TestRun_WaitsTheRetryAfter(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(openaitest.Reply{Status: 429, Content: "Rate limit reached"}, answer("你好"))
	var rec sleepRecorder
	opts := testOptions()
	opts.Sleep = rec.sleep
	res, err := agent.Run(context.Background(), retryAfterModel{m, 7 * time.Second}, testTurn("你好", nil), opts)
	if err != nil || res.Reply != "你好" {
		t.Fatalf("Run = %q, %v", res.Reply, err)
	}
	if len(rec.delays) != 1 || rec.delays[0] != 7*time.Second {
		t.Fatalf("delays %v, want one wait of the Retry-After, 7s", rec.delays)
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
