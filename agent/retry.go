package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// maxBackoff caps one retry delay: a chat user is waiting.
const maxBackoff = 10 * time.Second

// stepInfo says what a model call is for, for its trace step.
type stepInfo struct {
	stage  string // StagePlan, StageCompose, StageFormat or "" for the loop
	retry  int    // k for the k-th argument-correction retry
	stream bool   // stream the answer to Progress when the model can
}

// ask makes one model call (with retries on transient errors) and records
// its step. It returns the assistant message to continue the conversation
// with. Errors wrap the model's error (e.g. *openai.APIError) or
// ErrEmptyResponse, with the step number.
func (r *run) ask(ctx context.Context, req openai.ChatCompletionRequest, info stepInfo) (openai.ChatCompletionMessage, error) {
	r.n++
	n := r.n
	step := Step{N: n, Kind: StepModel, Stage: info.stage, Retry: info.retry, At: r.opts.Now(), Delta: r.deltas}
	r.deltas = nil
	if r.multi() && r.phase == phaseWork && info.stage == "" {
		step.Subtask = r.sub + 1
	}
	resp, failed, err := r.chat(ctx, req, n, info.stream)
	attempts := len(failed) + 1
	step.Latency = r.opts.Now().Sub(step.At)
	if attempts > 1 {
		step.Attempts, step.FailedAttempts = attempts, failed
	}
	step.PromptTokens, step.CompletionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
	r.result.PromptTokens += step.PromptTokens
	r.result.CompletionTokens += step.CompletionTokens
	if err == nil && len(resp.Choices) == 0 {
		err = ErrEmptyResponse
	}
	if err != nil {
		step.Error = err.Error()
		r.result.Steps = append(r.result.Steps, step)
		r.log.Warn("agent: model returned", "step", n, "stage", info.stage, "attempts", attempts, "error", err, "latency", step.Latency)
		return openai.ChatCompletionMessage{}, fmt.Errorf("agent: step %d: %w", n, err)
	}
	choice := resp.Choices[0]
	msg := assistantMessage(choice.Message, n)
	step.Content = msg.Content
	r.result.Steps = append(r.result.Steps, step)
	r.log.Debug("agent: model returned", "step", n, "stage", info.stage, "finish_reason", choice.FinishReason,
		"tool_calls", len(msg.ToolCalls), "prompt_tokens", step.PromptTokens,
		"completion_tokens", step.CompletionTokens, "attempts", attempts, "latency", step.Latency)
	return msg, nil
}

// chat calls the model, streaming when asked and possible, and retries
// what is worth retrying: 5xx, timeouts and dropped connections at most
// ModelAttempts times, with exponential backoff and jitter, and a 429 that
// waiting cures until the run's deadline (it is the one place a 429 is
// retried: the endpoint asked to wait, and the wait is at least its
// Retry-After when the model says it, see RetryAfterError). Each attempt
// has CallTimeout, capped by the run's own deadline. A stream that
// already showed text is not retried: the user would see it twice. failed
// holds the error of each attempt that was retried, for the trace.
func (r *run) chat(ctx context.Context, req openai.ChatCompletionRequest, n int, stream bool) (
	resp openai.ChatCompletionResponse, failed []string, err error) {
	streamer, canStream := r.model.(Streamer)
	stream = stream && canStream && r.opts.Progress != nil
	counted := 0 // attempts ModelAttempts bounds: every one but a 429's
	for attempt := 1; ; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
		shown := false
		if stream {
			f := &deltaFilter{r: r, step: n}
			resp, err = streamer.ChatStream(callCtx, req, func(text string) { shown = f.write(text) || shown })
			if err == nil {
				f.flush()
			}
		} else {
			resp, err = r.model.Chat(callCtx, req)
		}
		cancel()
		if !RateLimited(err) {
			counted++
		}
		if err == nil || counted >= r.opts.ModelAttempts || shown || !retryable(ctx, err) {
			return resp, failed, err
		}
		d := backoffDelay(r.opts.Backoff, attempt, rand.Float64())
		if ra := (*RetryAfterError)(nil); errors.As(err, &ra) {
			d = max(d, ra.After)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= d {
			return resp, failed, err // no time left to wait and try again
		}
		r.log.Info("agent: model call failed; retrying", "step", n, "attempt", attempt, "delay", d, "error", err)
		failed = append(failed, fmt.Sprintf("attempt %d: %v", attempt, err))
		if serr := r.opts.Sleep(ctx, d); serr != nil {
			return resp, failed, err
		}
	}
}

// backoffDelay is base doubled per attempt (1s, 2s, 4s ...), capped, then
// jittered to between half and all of it, so retries of many runs do not
// hit a recovering endpoint at the same instant. u is in [0, 1).
func backoffDelay(base time.Duration, attempt int, u float64) time.Duration {
	d := base << (attempt - 1)
	if d <= 0 || d > maxBackoff {
		d = maxBackoff
	}
	return d/2 + time.Duration(u*float64(d/2))
}

// retryable reports a transient model error. The run's own end (deadline
// or cancellation) is not: there is no time or reason left.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if RateLimited(err) {
		return true
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode >= 500
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0 {
		return reqErr.HTTPStatusCode >= 500
	}
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || // this attempt's CallTimeout
		errors.As(err, &netErr) && netErr.Timeout() ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// RateLimited reports a 429 that waiting cures: not an exhausted quota
// (insufficient_quota, which no wait cures). It is the one test of a 429
// of Hermes: the run retries what it reports, and the gateway's model
// limiter holds the replica's calls for its Retry-After.
func RateLimited(err error) bool {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		code, _ := apiErr.Code.(string)
		return apiErr.HTTPStatusCode == http.StatusTooManyRequests && code != "insufficient_quota"
	}
	var reqErr *openai.RequestError
	return errors.As(err, &reqErr) && reqErr.HTTPStatusCode == http.StatusTooManyRequests
}

// RetryAfterError is a 429 with the wait its endpoint asked for, as a model
// that reads Retry-After returns it (the gateway's model limiter): the run
// waits at least After before it tries again.
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// assistantMessage keeps only what belongs in the conversation. Reasoning
// text is dropped (DeepSeek rejects it in input), and tool calls without an
// id (some local servers omit it) get one, since every tool result must
// name the call it answers.
func assistantMessage(in openai.ChatCompletionMessage, n int) openai.ChatCompletionMessage {
	out := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: in.Content}
	for i, c := range in.ToolCalls {
		c.Index = nil // only meaningful in stream chunks
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d_%d", n, i+1)
		}
		if c.Type == "" {
			c.Type = openai.ToolTypeFunction
		}
		out.ToolCalls = append(out.ToolCalls, c)
	}
	return out
}
