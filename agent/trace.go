package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"unicode/utf8"
)

// traceTextBytes caps the arguments and observation kept in a Step: enough
// to see what happened, small enough for a run_steps row.
const traceTextBytes = 2 << 10

// toolStep is the trace entry of one tool call: the action with secrets
// masked, the start of the observation, latency and what changed.
func (r *run) toolStep(n int, c *callResult) Step {
	s := Step{
		N: n, Kind: StepTool, Tool: c.call.Function.Name, CallID: c.call.ID, RequestedTool: c.requested,
		Args: capText(maskSecrets(c.call.Function.Arguments), traceTextBytes), At: c.at, Latency: c.latency,
		Observation: capText(c.obs.text, traceTextBytes), Delta: c.deltas,
	}
	if c.err != nil {
		s.Error = c.err.Error()
	} else if c.obs.fail != nil {
		s.Error = firstLine(c.obs.text)
	}
	return s
}

// stopContext decides between timeout and cancellation once the run's
// context has ended. A deadline (ours or the caller's) is a budget stop; a
// cancellation of the caller's context is an interruption.
func (r *run) stopContext(parent context.Context) (Result, error) {
	if errors.Is(parent.Err(), context.Canceled) {
		return r.stop(StopCanceled, fmt.Errorf("agent: run canceled: %w", context.Cause(parent)))
	}
	return r.stop(StopTimeout, nil)
}

// stop records the stop reason and its sentinel, writes the honest partial
// reply for runs that did not answer, and logs the decision. Only a failed
// model call (StopError) and a cancellation return an error: the gateway
// retries those; every other stop is a reply to send.
func (r *run) stop(reason string, cause error) (Result, error) {
	r.result.StopReason = reason
	r.result.Cause = stopCause(reason, cause)
	if len(r.deltas) > 0 && len(r.result.Steps) > 0 { // changes after the last model call
		last := &r.result.Steps[len(r.result.Steps)-1]
		last.Delta = append(last.Delta, r.deltas...)
		r.deltas = nil
	}
	switch reason {
	case StopFinished, StopNeedsInput, StopAwaitingConfirmation:
		// the reply is already set: the answer, the question, the confirmation
	default:
		r.result.Reply = r.opts.Messages.partial(reason, r.progress, r.subs, r.n)
		r.result.Reply = maskPII(r.result.Reply, &r.keep)
	}
	level := slog.LevelInfo
	switch reason {
	case StopFinished, StopNeedsInput, StopAwaitingConfirmation:
		// asking the user is a normal end of a run
	default:
		level = slog.LevelWarn
	}
	r.log.Log(context.Background(), level, "agent: stop decided", "stop_reason", reason,
		"cause", errString(r.result.Cause), "steps", r.n, "prompt_tokens", r.result.PromptTokens,
		"completion_tokens", r.result.CompletionTokens)
	var err error
	if reason == StopError || reason == StopCanceled {
		err = cause // the caller logs it where it handles it
	}
	return r.result, err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// capText cuts s to at most limit bytes on a rune boundary, saying how much
// was dropped so a reader does not mistake a cut for the whole text.
func capText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	marker := fmt.Sprintf("\n[truncated: the full text had %d bytes]", len(s))
	keep := limit - len(marker)
	if keep < 0 {
		keep, marker = limit, ""
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + marker
}

// plural is for log-and-trace English only.
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
