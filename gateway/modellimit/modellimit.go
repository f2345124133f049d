package modellimit

import (
	"context"
	"net/http"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/time/rate"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/skills"
)

// The model is protected from the gateway, not the other way round: a
// replica keeps hundreds of runs in flight, and each waits its turn here
// for a slot (model.max_concurrent), for the per-minute budgets of requests
// and tokens, and, after the model answered 429, until its Retry-After has
// passed. The limits are per replica: with n replicas the model sees up to
// n times them. A 429 is retried in one place, the run's own retry
// (agent.RateLimited, until the run's deadline, so a storm of them slows
// runs down instead of failing them): the limiter holds every call of the
// replica for the Retry-After and hands it to the run with the error
// (agent.RetryAfterError), so the two waits overlap instead of stacking.

// retryAfterFallback is the pause after a 429 without a Retry-After
// header; the run's own backoff grows from there.
const retryAfterFallback = time.Second

// Limiter is what a replica's runs share in front of the model.
type Limiter struct {
	slots    chan struct{}
	requests *rate.Limiter // nil: no cap
	tokens   *rate.Limiter // nil: no cap
	maxPause time.Duration
	hint     time.Duration // model.queued_hint_after

	mu          sync.Mutex
	pausedUntil time.Time // after a 429, no call starts before this
}

// New is the limiter of cfg's model.max_concurrent, requests_per_minute,
// tokens_per_minute, max_retry_after and queued_hint_after.
func New(cfg config.ModelConfig) *Limiter {
	l := &Limiter{
		slots:    make(chan struct{}, cfg.MaxConcurrent),
		maxPause: cfg.MaxRetryAfter,
		hint:     cfg.QueuedHintAfter,
	}
	// A bucket holds a sixth of the minute's budget: a burst at start plus
	// the steady refill stays near the per-minute figure a provider counts.
	if cfg.RequestsPerMinute > 0 {
		l.requests = rate.NewLimiter(rate.Limit(float64(cfg.RequestsPerMinute)/60), max(1, cfg.RequestsPerMinute/6))
	}
	if cfg.TokensPerMinute > 0 {
		l.tokens = rate.NewLimiter(rate.Limit(float64(cfg.TokensPerMinute)/60), max(1, cfg.TokensPerMinute/6))
	}
	return l
}

// Model is inner as one run sees it: behind the limiter, calling queued
// (when not nil) with true once the run has waited model.queued_hint_after
// for its turn and with false when its turn came.
func (l *Limiter) Model(inner agent.Model, queued func(waiting bool)) agent.Model {
	m := &limitedModel{inner: inner, lim: l, queued: queued}
	if s, ok := inner.(agent.Streamer); ok {
		return streamingModel{m, s}
	}
	return m
}

type limitedModel struct {
	inner  agent.Model
	lim    *Limiter
	queued func(waiting bool)
}

// streamingModel is a limitedModel over a model that can stream.
type streamingModel struct {
	*limitedModel
	s agent.Streamer
}

// Chat implements agent.Model.
func (m *limitedModel) Chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return m.call(ctx, req, func(ctx context.Context) (openai.ChatCompletionResponse, error) {
		return m.inner.Chat(ctx, req)
	})
}

// ChatStream implements agent.Streamer. A 429 comes before any text, so
// retrying it never shows text twice.
func (m streamingModel) ChatStream(ctx context.Context, req openai.ChatCompletionRequest, onDelta func(string)) (openai.ChatCompletionResponse, error) {
	return m.call(ctx, req, func(ctx context.Context) (openai.ChatCompletionResponse, error) {
		return m.s.ChatStream(ctx, req, onDelta)
	})
}

// call makes one model call in turn. After a 429 it holds back every call
// of this replica for the answer's Retry-After (retryAfterFallback without
// one, at most model.max_retry_after) and returns the error as an
// *agent.RetryAfterError, which the run retries. Errors are the model's,
// or ctx's when it ended while waiting.
func (m *limitedModel) call(ctx context.Context, req openai.ChatCompletionRequest,
	do func(context.Context) (openai.ChatCompletionResponse, error)) (openai.ChatCompletionResponse, error) {
	estimate := estimateTokens(req)
	if err := m.wait(ctx, estimate); err != nil {
		return openai.ChatCompletionResponse{}, err
	}
	ra := &retryAfter{}
	resp, err := do(context.WithValue(ctx, retryAfterKey{}, ra))
	<-m.lim.slots
	if m.lim.tokens != nil && resp.Usage.TotalTokens > estimate {
		// Charge what the call really used; later calls wait for it.
		m.lim.tokens.ReserveN(time.Now(), min(resp.Usage.TotalTokens-estimate, m.lim.tokens.Burst()))
	}
	if !agent.RateLimited(err) {
		return resp, err
	}
	pause, ok := ra.get()
	if !ok {
		pause = retryAfterFallback
	}
	pause = min(pause, m.lim.maxPause)
	m.lim.pause(pause)
	return resp, &agent.RetryAfterError{Err: err, After: pause}
}

// wait blocks until this call may start (a slot taken, no 429 pause, the
// per-minute budgets allow it), telling the run when it waits long.
func (m *limitedModel) wait(ctx context.Context, tokens int) error {
	if m.queued != nil {
		var mu sync.Mutex
		hinted, done := false, false
		t := time.AfterFunc(m.lim.hint, func() {
			mu.Lock()
			defer mu.Unlock()
			if !done {
				hinted = true
				m.queued(true)
			}
		})
		defer func() {
			t.Stop()
			mu.Lock()
			defer mu.Unlock()
			done = true
			if hinted {
				m.queued(false)
			}
		}()
	}
	select {
	case m.lim.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	err := m.lim.admit(ctx, tokens)
	if err != nil {
		<-m.lim.slots
	}
	return err
}

// admit waits out a 429 pause and the per-minute budgets.
func (l *Limiter) admit(ctx context.Context, tokens int) error {
	for {
		l.mu.Lock()
		d := time.Until(l.pausedUntil)
		l.mu.Unlock()
		if d <= 0 {
			break
		}
		if skills.Sleep(ctx, d) != nil {
			return ctx.Err()
		}
	}
	if l.requests != nil {
		if err := l.requests.Wait(ctx); err != nil {
			return err
		}
	}
	if l.tokens != nil {
		if err := l.tokens.WaitN(ctx, min(tokens, l.tokens.Burst())); err != nil {
			return err
		}
	}
	return nil
}

// pause holds back every call of this replica for d from now.
func (l *Limiter) pause(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := time.Now().Add(d); until.After(l.pausedUntil) {
		l.pausedUntil = until
	}
}

// estimateTokens guesses a request's prompt tokens before it is sent:
// about one token per 3 bytes, which fits Chinese (3-byte characters of
// about a token each) and errs high for English.
func estimateTokens(req openai.ChatCompletionRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.ReasoningContent)
		for _, c := range m.ToolCalls {
			n += len(c.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		if t.Function != nil {
			n += len(t.Function.Description) + len(t.Function.Name) + 200 // the schema, roughly
		}
	}
	return max(1, n/3)
}

// retryAfter carries a 429's Retry-After from the HTTP transport to the
// call that got it (go-openai's errors do not carry headers).
type retryAfter struct {
	mu sync.Mutex
	d  time.Duration
	ok bool
}

type retryAfterKey struct{}

func (r *retryAfter) get() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.d, r.ok
}

// retryAfterTransport reads Retry-After (seconds or an HTTP date) and
// retry-after-ms of 429 answers into the request's retryAfter.
type retryAfterTransport struct{ base http.RoundTripper }

func (t retryAfterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		return resp, err
	}
	ra, ok := req.Context().Value(retryAfterKey{}).(*retryAfter)
	if !ok {
		return resp, nil
	}
	if d, ok := skills.ParseRetryAfter(resp.Header, time.Now()); ok {
		ra.mu.Lock()
		ra.d, ra.ok = d, true
		ra.mu.Unlock()
	}
	return resp, nil
}

// HTTPClient is the HTTP client of the model: it keeps a connection
// per call in flight for reuse (the default keeps two per host, so
// hundreds of calls would open and close connections all the time), and
// reads Retry-After.
func HTTPClient(cfg config.ModelConfig) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConns = max(base.MaxIdleConns, cfg.MaxConcurrent)
	base.MaxIdleConnsPerHost = cfg.MaxConcurrent
	return &http.Client{Timeout: cfg.Timeout, Transport: retryAfterTransport{base: base}}
}
