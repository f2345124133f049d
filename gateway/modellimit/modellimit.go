package modellimit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/config"
)

// The model is protected from the gateway, not the other way round: a
// replica keeps hundreds of runs in flight, and each waits its turn here
// for a slot (model.max_concurrent), for the per-minute budgets of requests
// and tokens, and, after the model answered 429, until its Retry-After has
// passed. Where the turn is kept is the gate's business: in this replica
// (replica.go, model.limits_scope: replica, the default) or in Postgres
// for every replica at once (shared.go, limits_scope: shared). A 429 is
// retried in one place, the run's own retry (agent.RateLimited, until the
// run's deadline, so a storm of them slows runs down instead of failing
// them): the limiter holds every call back for the Retry-After and hands
// it to the run with the error (agent.RetryAfterError), so the two waits
// overlap instead of stacking.

// retryAfterFallback is the pause after a 429 without a Retry-After
// header; the run's own backoff grows from there.
const retryAfterFallback = time.Second

// Limiter is what the runs share in front of the model.
type Limiter struct {
	gate     gate
	maxPause time.Duration
	hint     time.Duration // model.queued_hint_after
}

// gate is where a call waits for its turn.
type gate interface {
	// acquire waits until a call whose prompt is estimated at estimate
	// tokens may start: a slot is taken, no 429 pause runs, the budgets
	// have room. The call then reports, once, what it used (its total
	// tokens) and the pause a 429 asks for (0: none) to release. Errors
	// are ctx's, or the database's for the shared gate.
	acquire(ctx context.Context, estimate int) (release func(used int, pause time.Duration), err error)
}

// New is the limiter of cfg's model.limits_scope, max_concurrent,
// requests_per_minute, tokens_per_minute, max_retry_after and
// queued_hint_after. pool keeps the limits shared by every replica when
// limits_scope is shared; without one, every call then fails with
// ErrNoDatabase. It is not used otherwise.
func New(cfg config.ModelConfig, pool *pgxpool.Pool) *Limiter {
	var g gate
	switch {
	case cfg.LimitsScope != config.LimitsShared:
		g = newReplicaGate(cfg)
	case pool == nil: // a gateway built only to check its config
		g = noDatabase{}
	default:
		g = newSharedGate(cfg, pool, time.Now)
	}
	return &Limiter{gate: g, maxPause: cfg.MaxRetryAfter, hint: cfg.QueuedHintAfter}
}

// ErrNoDatabase is the error of every call behind a limiter whose limits
// are shared but that was given no database.
var ErrNoDatabase = errors.New("modellimit: model.limits_scope is shared but there is no database")

// noDatabase is the gate of a shared limiter without a database.
type noDatabase struct{}

func (noDatabase) acquire(context.Context, int) (func(int, time.Duration), error) {
	return nil, ErrNoDatabase
}

// bucketDepth is how much of a per-minute budget may be spent at once: a
// sixth of it, so that a burst at start plus the steady refill stays near
// the per-minute figure a provider counts. Both gates use it.
func bucketDepth(perMinute int) int { return max(1, perMinute/6) }

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
// behind the limiter for the answer's Retry-After (retryAfterFallback
// without one, at most model.max_retry_after) and returns the error as an
// *agent.RetryAfterError, which the run retries. Errors are the model's,
// ctx's when it ended while waiting, or the database's when the shared
// limits could not be read.
func (m *limitedModel) call(ctx context.Context, req openai.ChatCompletionRequest,
	do func(context.Context) (openai.ChatCompletionResponse, error)) (openai.ChatCompletionResponse, error) {
	release, err := m.wait(ctx, estimateTokens(req))
	if err != nil {
		return openai.ChatCompletionResponse{}, err
	}
	ra := &retryAfter{}
	resp, err := do(context.WithValue(ctx, retryAfterKey{}, ra))
	if !agent.RateLimited(err) {
		release(resp.Usage.TotalTokens, 0)
		return resp, err
	}
	pause, ok := ra.get()
	if !ok {
		pause = retryAfterFallback
	}
	pause = min(pause, m.lim.maxPause)
	release(resp.Usage.TotalTokens, pause)
	return resp, &agent.RetryAfterError{Err: err, After: pause}
}

// wait blocks until this call may start, telling the run when it waits
// long.
func (m *limitedModel) wait(ctx context.Context, estimate int) (func(int, time.Duration), error) {
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
	return m.lim.gate.acquire(ctx, estimate)
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
