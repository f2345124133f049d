package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/skills"
)

// ErrEmptyResponse is wrapped when the model answers without any choice.
var ErrEmptyResponse = errors.New("model returned no choices")

// traceTextBytes caps the arguments and observation kept in a Step: enough
// to see what happened, small enough for a run_steps row.
const traceTextBytes = 2 << 10

// Run answers one turn: it asks the model, runs the tools it calls in order,
// feeds the results back, and repeats until the model answers in text or a
// budget runs out. The budgets are explicit: Options.MaxSteps model calls and
// Options.Timeout of wall clock.
//
// Tool failures (including an unknown tool or arguments that are not a JSON
// object) never end the run: they go back to the model as text, which can
// retry or explain. Budget stops (StopMaxSteps, StopTimeout) return a nil
// error and an honest partial Reply. Run returns an error only with
// StopError (the model call failed, wrapped with the step; or Turn.Tools has
// duplicate names) and StopCanceled (ctx was canceled; wraps its cause). In
// every case the Result holds the steps so far.
func Run(ctx context.Context, m Model, turn Turn, opts Options) (Result, error) {
	opts = opts.withDefaults()
	r := &run{
		opts: opts,
		log:  opts.Logger.With("session_id", turn.SessionID, "run_id", turn.RunID),
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	var err error
	if r.tools, r.defs, err = indexTools(turn.Tools); err != nil {
		return r.stop(StopError, fmt.Errorf("agent: %w", err))
	}
	// The messages only ever grow by appending: the system prompt and every
	// earlier message stay byte-identical, so endpoint prompt caches hit.
	msgs := initialMessages(turn)
	r.log.Debug("agent: input ready", "messages", len(msgs), "tools", len(r.defs),
		"max_steps", opts.MaxSteps, "timeout", opts.Timeout)

	for n := 1; ; n++ {
		if ctx.Err() != nil {
			return r.stopContext(parent)
		}
		if n > opts.MaxSteps {
			return r.stop(StopMaxSteps, nil)
		}

		msg, err := r.callModel(ctx, m, n, openai.ChatCompletionRequest{Model: opts.Model, Messages: msgs, Tools: r.defs})
		if err != nil {
			if ctx.Err() != nil {
				return r.stopContext(parent)
			}
			return r.stop(StopError, fmt.Errorf("agent: step %d: %w", n, err))
		}
		if len(msg.ToolCalls) == 0 {
			r.result.Reply = strings.TrimSpace(msg.Content)
			if r.result.Reply == "" {
				r.result.Reply = opts.Messages.Empty
			}
			return r.stop(StopFinished, nil)
		}

		msgs = append(msgs, msg)
		for _, call := range msg.ToolCalls {
			if ctx.Err() != nil {
				r.progress.record(call.Function.Name, false)
				continue // the top of the loop reports the timeout
			}
			msgs = append(msgs, openai.ChatCompletionMessage{
				Role:       openai.ChatMessageRoleTool,
				Content:    r.callTool(ctx, n, call),
				ToolCallID: call.ID,
			})
		}
	}
}

// run is the state of one Run, kept out of the loop so the loop reads as
// the algorithm.
type run struct {
	opts     Options
	log      *slog.Logger
	tools    map[string]skills.Tool
	defs     []openai.Tool
	result   Result
	progress progress
}

func (o Options) withDefaults() Options {
	if o.MaxSteps <= 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxObservationBytes <= 0 {
		o.MaxObservationBytes = DefaultMaxObservationBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Messages = o.Messages.withDefaults()
	return o
}

// indexTools builds the name index and the request's tool list once, so
// the tools block is byte-identical in every request of the run.
func indexTools(tools []skills.Tool) (map[string]skills.Tool, []openai.Tool, error) {
	index := make(map[string]skills.Tool, len(tools))
	var defs []openai.Tool
	for _, t := range tools {
		spec := t.Spec()
		if _, dup := index[spec.Name]; dup {
			return nil, nil, fmt.Errorf("two tools named %q", spec.Name)
		}
		index[spec.Name] = t
		params := spec.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		defs = append(defs, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: spec.Name, Description: spec.Description, Parameters: params,
		}})
	}
	return index, defs, nil
}

func initialMessages(turn Turn) []openai.ChatCompletionMessage {
	var msgs []openai.ChatCompletionMessage
	if turn.SystemPrompt != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: turn.SystemPrompt})
	}
	msgs = append(msgs, turn.History...)
	return append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: turn.UserText})
}

// callModel makes model call n and records its step. It returns the
// assistant message to append to the conversation.
func (r *run) callModel(ctx context.Context, m Model, n int, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error) {
	start := r.opts.Now()
	resp, err := m.Chat(ctx, req)
	step := Step{N: n, Kind: StepModel, At: start, Latency: r.opts.Now().Sub(start),
		PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	r.result.PromptTokens += step.PromptTokens
	r.result.CompletionTokens += step.CompletionTokens
	if err == nil && len(resp.Choices) == 0 {
		err = ErrEmptyResponse
	}
	if err != nil {
		step.Error = err.Error()
		r.result.Steps = append(r.result.Steps, step)
		r.log.Debug("agent: model returned", "step", n, "error", err, "latency", step.Latency)
		return openai.ChatCompletionMessage{}, err
	}
	choice := resp.Choices[0]
	msg := assistantMessage(choice.Message, n)
	step.Content = msg.Content
	r.result.Steps = append(r.result.Steps, step)
	r.log.Debug("agent: model returned", "step", n, "finish_reason", choice.FinishReason,
		"tool_calls", len(msg.ToolCalls), "prompt_tokens", step.PromptTokens,
		"completion_tokens", step.CompletionTokens, "latency", step.Latency)
	return msg, nil
}

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

// callTool runs one tool call and returns the observation for the model:
// the tool's output, or "error: ..." for any failure, capped to
// MaxObservationBytes.
func (r *run) callTool(ctx context.Context, n int, call openai.ToolCall) string {
	name, args := call.Function.Name, call.Function.Arguments
	start := r.opts.Now()
	out, err := r.invoke(ctx, name, args)
	step := Step{N: n, Kind: StepTool, Tool: name, CallID: call.ID, Args: capText(args, traceTextBytes),
		At: start, Latency: r.opts.Now().Sub(start)}
	obs := out
	if err != nil {
		step.Error = err.Error()
		obs = "error: " + err.Error()
	}
	obs = capText(obs, r.opts.MaxObservationBytes)
	step.Observation = capText(obs, traceTextBytes)
	r.result.Steps = append(r.result.Steps, step)
	r.progress.record(name, err == nil)

	level := slog.LevelDebug
	if err != nil {
		level = slog.LevelWarn
	}
	r.log.Log(ctx, level, "agent: tool returned", "step", n, "tool", name, "call_id", call.ID,
		"bytes", len(out), "error", step.Error, "latency", step.Latency)
	return obs
}

// invoke finds and calls the tool. The checks here make the common model
// mistakes into errors the model can read and correct.
func (r *run) invoke(ctx context.Context, name, args string) (out string, err error) {
	tool, ok := r.tools[name]
	if !ok {
		return "", fmt.Errorf("unknown tool %q; available tools: %s", name, r.toolNames())
	}
	if strings.TrimSpace(args) == "" {
		args = "{}" // some models send nothing for tools without parameters
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		return "", fmt.Errorf("arguments of %s are not a valid JSON object (%v); call it again with a JSON object matching its parameters", name, err)
	}
	defer func() {
		// A buggy tool must cost one step, not the worker.
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("tool %s failed unexpectedly", name)
			r.log.Error("agent: tool panicked", "tool", name, "panic", p)
		}
	}()
	res, err := tool.Call(ctx, json.RawMessage(args))
	return string(res.Body), err
}

func (r *run) toolNames() string {
	if len(r.defs) == 0 {
		return "(none)"
	}
	names := make([]string, len(r.defs))
	for i, d := range r.defs {
		names[i] = d.Function.Name
	}
	return strings.Join(names, ", ")
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

// stop records the stop reason, writes the partial reply for unfinished
// runs and logs the decision.
func (r *run) stop(reason string, err error) (Result, error) {
	r.result.StopReason = reason
	if reason != StopFinished {
		r.result.Reply = r.opts.Messages.partial(reason, r.progress)
	}
	level := slog.LevelInfo
	if reason != StopFinished {
		level = slog.LevelWarn
	}
	r.log.Log(context.Background(), level, "agent: stop decided", "stop_reason", reason,
		"steps", len(r.result.Steps), "prompt_tokens", r.result.PromptTokens,
		"completion_tokens", r.result.CompletionTokens)
	return r.result, err // the caller logs err where it handles it
}

// capText cuts s to at most max bytes on a rune boundary, saying how much
// was dropped so the model does not mistake a cut for the whole answer.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	marker := fmt.Sprintf("\n[truncated: the full text had %d bytes]", len(s))
	keep := max - len(marker)
	if keep < 0 {
		keep, marker = max, ""
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + marker
}
