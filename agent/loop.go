package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Run answers one turn. It prepares the input (normalize.go, offer.go),
// optionally plans (plan.go), then loops: check the budgets, compress the
// context if it is too large, ask the model, and either take its answer or
// run the tools it called and feed the results back.
//
// The budgets and stops, checked in this order each time round:
//   - the wall clock (Options.Timeout): StopTimeout; the caller's
//     cancellation: StopCanceled;
//   - model calls per task (Options.MaxSteps): StopMaxSteps;
//   - an answer (text, or the finish tool): StopFinished, after any next
//     subtask, composition or one format fix;
//   - a call repeated with the same arguments (Options.MaxRepeats):
//     StopRepeated;
//   - a tool error retrying cannot fix: StopFatalTool;
//   - a skill asking the user (StopNeedsInput) or waiting for confirmation
//     (StopAwaitingConfirmation);
//   - rounds in a row without a successful skill call
//     (Options.MaxIdleRounds): StopIdle.
//
// With a plan of several subtasks, StopMaxSteps, StopRepeated and StopIdle
// end only the current subtask, which is recorded as failed.
//
// Tool failures (unknown tool, invalid arguments, refused, unavailable) do
// not end the run: they go back to the model as text it can act on. Every
// stop except StopFinished sets Result.Cause to its sentinel and an honest
// partial Reply. Run returns an error only with StopError (a model call
// failed after retries, wrapped with the step; or Turn.Tools has duplicate
// or reserved names; or Turn.Resume is unusable) and StopCanceled (wraps
// the cause of ctx's cancellation). In every case the Result holds the
// steps so far.
func Run(ctx context.Context, m Model, turn Turn, opts Options) (Result, error) {
	opts = opts.withDefaults()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	r, err := newRun(m, turn, opts)
	if err != nil {
		return r.stop(StopError, fmt.Errorf("agent: %w", err))
	}
	if reason, cause := r.planStage(ctx); reason != "" {
		if ctx.Err() != nil {
			return r.stopContext(parent)
		}
		return r.stop(reason, cause)
	}
	r.buildContext()

	for {
		if ctx.Err() != nil {
			return r.stopContext(parent)
		}
		free := r.freeNext
		if !free && r.taskSteps >= opts.MaxSteps {
			if r.failSubtask(StopMaxSteps) {
				continue
			}
			if r.phase == phaseFormat { // the answer exists; only its shape is unfixed
				return r.finish()
			}
			return r.stop(StopMaxSteps, fmt.Errorf("%d model calls", r.taskSteps))
		}
		r.compress(ctx)

		info := stepInfo{stage: r.stage(), stream: true}
		if free && r.phase != phaseFormat {
			info.retry = r.retry
		}
		r.freeNext = false
		if !free {
			r.taskSteps++
		}
		msg, err := r.ask(ctx, r.request(), info)
		if err != nil {
			if ctx.Err() != nil {
				return r.stopContext(parent)
			}
			return r.stop(StopError, err)
		}

		calls, fromText := r.proposedCalls(msg)
		if a, ok := r.answerOf(msg, calls, fromText); ok {
			if r.next(a) {
				continue
			}
			return r.finish()
		}

		round := r.runCalls(ctx, msg, calls, fromText)
		if round.stop == StopRepeated && r.failSubtask(StopRepeated) {
			continue
		}
		if round.stop != "" {
			return r.stop(round.stop, round.cause)
		}
		r.reoffer()
		if round.succeeded {
			r.idle = 0
		} else if r.idle++; r.idle >= opts.MaxIdleRounds && !round.retryPromised {
			if r.failSubtask(StopIdle) {
				continue
			}
			return r.stop(StopIdle, fmt.Errorf("%d rounds without a successful tool call", r.idle))
		}
	}
}

// request is the next model request: the conversation and the tools block,
// both byte-identical to the previous request's except for what was
// appended (or compressed, or a withdrawn tool).
func (r *run) request() openai.ChatCompletionRequest {
	req := openai.ChatCompletionRequest{Model: r.opts.Model, Messages: withGoalParts(r.msgs, r.meta, notesBlock(r.turn.Notes), r.turn.Images)}
	if !r.opts.ToolsInText {
		req.Tools = r.defs
	}
	return req
}

// stage names the loop's current stage for the trace.
func (r *run) stage() string {
	switch r.phase {
	case phaseCompose:
		return StageCompose
	case phaseFormat:
		return StageFormat
	}
	return ""
}

// finish sends the answer, presented as whose data it shows (whose.go)
// and masked for personal numbers except those that came from safe
// fields.
func (r *run) finish() (Result, error) {
	reply := strings.TrimSpace(r.final)
	if reply == "" {
		reply = r.opts.Messages.Empty
	}
	reply = r.presentWhose(reply)
	r.result.Reply = maskPII(reply, &r.keep)
	return r.stop(StopFinished, nil)
}

// withGoalParts is msgs with the goal message as the model gets it: the
// user's notes (notes, "" for none) before the request's text, and the
// user's images after it, as content parts. msgs itself keeps the request
// alone (the trace, a continuation, compression and skill offering read
// it), so the notes and images are added to every request of the run the
// same way and the requests stay byte-identical.
func withGoalParts(msgs []openai.ChatCompletionMessage, meta []msgMeta, notes string, images []Image) []openai.ChatCompletionMessage {
	if len(images) == 0 && notes == "" {
		return msgs
	}
	for i, m := range meta {
		if m.kind != msgGoal {
			continue
		}
		out := slices.Clone(msgs)
		text := msgs[i].Content
		if notes != "" {
			text = notes + "\n\n" + text
		}
		if len(images) == 0 {
			out[i].Content = text
			return out
		}
		parts := []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: text}}
		for _, img := range images {
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: img.URL, Detail: openai.ImageURLDetailAuto}})
		}
		out[i].Content, out[i].MultiContent = "", parts
		return out
	}
	return msgs
}
