package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/skills"
)

// proposedCall is a tool call the model made, its name resolved.
type proposedCall struct {
	call      openai.ToolCall // the registered name when it was corrected
	requested string          // the model's spelling, when corrected
	known     bool
}

// callResult is one tool call of a round, from preparation to the trace.
type callResult struct {
	call      openai.ToolCall
	requested string
	entry     *toolEntry // the skill; nil for built-ins and unknown names
	recall    bool       // the built-in recall_observation
	load      bool       // the built-in load_skills
	loaded    []*toolEntry
	dupOf     *callResult // an earlier call of the round this one repeats (a write)
	key       string      // callKey, for repeats
	args      json.RawMessage
	runnable  bool
	badArgs   bool
	ran       bool
	obs       observation
	err       error
	res       skills.Result
	deltas    []string
	at        time.Time
	latency   time.Duration
	stop      string // the stop this call's outcome demands
	cause     error
}

// roundOutcome is what a tool round means for the loop.
type roundOutcome struct {
	stop      string
	cause     error
	succeeded bool // at least one skill call succeeded: the round was not idle
	// retryPromised: a call failed transiently and its observation said it
	// may be tried once more, so the idle budget waits for that retry.
	retryPromised bool
}

// proposedCalls returns the calls of an assistant message with their names
// resolved: the native ones, or when there are none those written as JSON
// in its text (only objects naming a tool on offer count, so an answer
// that is JSON data is not mistaken for a call). Text calls are taken only
// when the model was told to write them (ToolsInText) or when the whole
// message is calls: a JSON object inside prose may be echoed from a tool
// result or the user's message, and must never run.
func (r *run) proposedCalls(msg openai.ChatCompletionMessage) ([]proposedCall, bool) {
	names := r.callableNames()
	resolve := func(c openai.ToolCall) proposedCall {
		name, ok := resolveToolName(c.Function.Name, names)
		p := proposedCall{call: c, known: ok}
		if ok && name != c.Function.Name {
			p.requested, p.call.Function.Name = c.Function.Name, name
		}
		return p
	}
	var out []proposedCall
	if len(msg.ToolCalls) > 0 {
		for _, c := range msg.ToolCalls {
			out = append(out, resolve(c))
		}
		return out, false
	}
	if !r.opts.ToolsInText && !onlyJSONObjects(msg.Content) {
		return nil, false
	}
	for _, c := range textToolCalls(msg.Content) {
		if p := resolve(c); p.known {
			p.call.ID = fmt.Sprintf("text_%d_%d", r.n, len(out)+1)
			out = append(out, p)
		}
	}
	return out, len(out) > 0
}

// runCalls runs one round of tool calls: it checks every call first
// (name, arguments, repeats), appends the model's message, runs the calls
// (in order; consecutive ParallelSafe skills together), then records the
// results in call order: failure counts, withdrawn tools, trace steps and
// the observations the model sees next.
func (r *run) runCalls(ctx context.Context, msg openai.ChatCompletionMessage, calls []proposedCall, fromText bool) roundOutcome {
	n := r.n
	results := make([]*callResult, len(calls))
	var out roundOutcome
	cut, badArgs := len(calls), false
	for i, p := range calls {
		c := r.prepare(p)
		results[i] = c
		badArgs = badArgs || c.badArgs
		if !c.runnable || out.stop != "" {
			continue
		}
		key := callKey(c.call.Function.Name, c.args)
		c.key = key
		if r.repeats[key]++; r.repeats[key] > r.opts.MaxRepeats {
			out.stop, cut = StopRepeated, i
			out.cause = fmt.Errorf("%s called %d times with the same arguments %s", c.call.Function.Name,
				r.repeats[key], cutHead(canonicalJSON(c.args), 200))
		}
	}
	r.notRun(results[cut:], StopRepeated)
	r.dedupeWrites(results[:cut])

	r.rounds = append(r.rounds, len(r.msgs))
	assistant := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content}
	if !fromText {
		for _, c := range results {
			assistant.ToolCalls = append(assistant.ToolCalls, c.call)
		}
	}
	r.appendMsg(assistant, msgOther, "")

	r.execute(ctx, n, results[:cut])
	settleDuplicates(results[:cut])
	for _, c := range results {
		r.account(c, &out)
	}
	r.appendObservations(results, fromText)
	r.lastRound = results

	switch {
	case badArgs && r.retry < r.opts.MaxArgRetries:
		r.retry++
		r.freeNext = true
		r.note("invalid arguments sent back; argument retry %d of %d", r.retry, r.opts.MaxArgRetries)
	case !badArgs:
		r.retry = 0
	}
	if out.stop == StopNeedsInput || out.stop == StopAwaitingConfirmation {
		r.result.Continuation = r.continuation()
	}
	return out
}

// prepare checks one call before anything runs. Its time is when it was
// checked; call() sets it again when it runs, so a call that never ran is
// still placed in time in the trace.
func (r *run) prepare(p proposedCall) *callResult {
	c := &callResult{call: p.call, requested: p.requested, at: r.opts.Now()}
	name := p.call.Function.Name
	if p.requested != "" {
		c.deltas = append(c.deltas, fmt.Sprintf("tool name corrected: %s → %s", p.requested, name))
	}
	switch {
	case !p.known:
		c.obs.text = fmt.Sprintf("error: unknown_tool: there is no tool %q\nwhat to change: call one of the offered tools: %s",
			name, strings.Join(r.callableNames(), ", "))
	case name == toolFinish:
		c.obs.text = "ignored: call finish on its own, once you have the results of the other calls"
	case r.withdrawn[name]:
		c.obs.text = fmt.Sprintf("error: withdrawn: %s failed too often and is withdrawn for the rest of this conversation. "+
			"Do not call it again; tell the user this system is unavailable right now.", name)
	case name == toolRecall || name == toolLoadSkills:
		c.recall, c.load = name == toolRecall, name == toolLoadSkills
		c.runnable, c.args = true, json.RawMessage(cmpOr(strings.TrimSpace(p.call.Function.Arguments), "{}"))
	default:
		if r.byName[name] == nil { // a skill of the index, called without loading it first
			r.install([]*toolEntry{r.indexEntry(name)})
			c.deltas = append(c.deltas, "skill loaded from the index: "+name)
		}
		c.entry = r.byName[name]
		raw, stated, _ := takeSubject(p.call.Function.Arguments, c.entry.subjectKey)
		if who := r.aboutOther(stated); c.entry.personal && who != "" {
			r.refuseOther(c, who)
			break
		}
		args, aerr := validateArgs(c.entry, raw)
		if aerr != nil {
			c.badArgs = true
			c.obs = observation{text: aerr.Error(), fail: invalidArgsClass()}
			c.deltas = append(c.deltas, "arguments invalid: sent back to the model")
			break
		}
		c.args, c.runnable = args, true
	}
	return c
}

func invalidArgsClass() *errorClass {
	c, _ := classifyError(skills.ErrInvalidArguments)
	return c
}

// notRun marks calls that will not run because the round stopped.
func (r *run) notRun(calls []*callResult, reason string) {
	for _, c := range calls {
		if c.runnable {
			c.runnable = false
			c.obs = observation{text: fmt.Sprintf("not run: the task stopped before this call (%s)", reason)}
		}
	}
}

// execute runs the runnable calls. Calls run one after the other, because
// a later call may depend on the effect of an earlier one; a run of
// consecutive calls to ParallelSafe skills runs concurrently. A call whose
// outcome stops the task (confirmation, a question, a fatal error) keeps
// the calls after it from running.
func (r *run) execute(ctx context.Context, n int, calls []*callResult) {
	for i := 0; i < len(calls); {
		if !calls[i].runnable {
			i++
			continue
		}
		j := i + 1
		if parallelSafe(calls[i]) {
			for j < len(calls) && calls[j].runnable && parallelSafe(calls[j]) {
				j++
			}
		}
		if j-i == 1 {
			r.call(ctx, n, calls[i])
		} else {
			var wg sync.WaitGroup
			for _, c := range calls[i:j] {
				wg.Go(func() { r.call(ctx, n, c) })
			}
			wg.Wait()
		}
		for _, c := range calls[i:j] {
			if c.stop != "" {
				r.notRun(calls[j:], c.stop)
				return
			}
		}
		i = j
	}
}

func parallelSafe(c *callResult) bool { return c.entry != nil && c.entry.spec.ParallelSafe }

// call runs one call and turns its outcome into an observation. It may run
// concurrently with other calls of the round: it only writes c, and the
// shared safe-number set locks.
func (r *run) call(ctx context.Context, n int, c *callResult) {
	name := c.call.Function.Name
	display := name
	if c.entry != nil {
		display = displayName(c.entry.spec)
	}
	r.emit(Event{Kind: EventToolStart, Tool: name, ToolDisplay: display, Step: n})
	c.at, c.ran = r.opts.Now(), true
	switch {
	case c.recall:
		c.obs = r.recall(ctx, c.args)
	case c.load:
		c.obs, c.loaded = r.loadSkills(c.args)
	default:
		c.res, c.err = safeCall(ctx, c.entry.tool, c.args)
		r.observe(ctx, c)
	}
	c.latency = r.opts.Now().Sub(c.at)
	ev := Event{Kind: EventToolDone, Tool: name, ToolDisplay: display, Step: n}
	level := slog.LevelDebug
	if c.obs.fail != nil {
		ev.Error, level = firstLine(c.obs.text), slog.LevelWarn
	}
	r.emit(ev)
	r.log.Log(ctx, level, "agent: tool returned", "step", n, "tool", name, "call_id", c.call.ID,
		"status", c.res.Status, "bytes", len(c.res.Body), "error", ev.Error, "stop", c.stop, "latency", c.latency)
}

// observe interprets a skill's outcome.
func (r *run) observe(ctx context.Context, c *callResult) {
	name := c.entry.spec.Name
	if c.err != nil {
		if ctx.Err() != nil { // the run ended, not the skill
			c.obs = observation{text: "error: interrupted: the task ran out of time before the tool answered",
				fail: &errorClass{kind: "interrupted", label: func(m Messages) string { return m.FailOther }}}
			return
		}
		text, class := describeError(name, c.err)
		c.obs = observation{text: text, fail: class}
		if class.fatal {
			c.stop, c.cause = StopFatalTool, fmt.Errorf("tool %s: %w", name, c.err)
		}
		return
	}
	if conf := c.res.Confirm; conf != nil {
		// The prompt is rendered from the arguments (a phone number the
		// user gave): it is shown, stored and traced like a reply, so it is
		// masked like one, here once for every place it goes.
		masked := *conf
		masked.Prompt = maskPII(conf.Prompt, &r.keep)
		c.res.Confirm = &masked
	}
	c.obs = observeResult(c.res, c.entry.spec, r.opts.MaxObservationBytes, &r.keep)
	switch {
	case c.res.Confirm != nil:
		c.stop = StopAwaitingConfirmation
		c.cause = fmt.Errorf("tool %s: %s", name, c.res.Confirm.Prompt)
	case c.obs.followup != "":
		// A backend asks only when it cannot go on; without a question
		// (no "question"/"message" field) the model sees the answer and
		// asks the user itself.
		c.stop = StopNeedsInput
		c.cause = fmt.Errorf("tool %s: %s", name, c.obs.followup)
	}
}

// safeCall calls a tool; a panicking tool costs one call, not the worker.
func safeCall(ctx context.Context, t skills.Tool, args json.RawMessage) (res skills.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = skills.Result{}, fmt.Errorf("tool failed unexpectedly (panic: %v)", p)
		}
	}()
	return t.Call(ctx, args)
}

// account books one call's outcome, in call order: progress for the
// partial answer, failures and withdrawal, async tasks, the stop and its
// reply, and the trace step.
func (r *run) account(c *callResult, out *roundOutcome) {
	name := c.call.Function.Name
	if len(c.loaded) > 0 {
		r.install(c.loaded)
		var names []string
		for _, e := range c.loaded {
			names = append(names, e.spec.Name)
		}
		c.deltas = append(c.deltas, "skills loaded from the index: "+strings.Join(names, ", "))
	}
	if c.entry != nil {
		r.called[name] = true
	}
	switch {
	case c.entry == nil:
	case c.obs.ok:
		r.noteSubject(c)
		r.progress.record(displayName(c.entry.spec), true, "")
		r.progress.addFact(displayName(c.entry.spec), factOf(c.obs))
		out.succeeded = true
		if c.ran && isWrite(c) {
			r.writes[c.key] = c.obs.text
		}
	case c.obs.fail != nil:
		r.progress.record(displayName(c.entry.spec), false, c.obs.fail.label(r.opts.Messages))
		if transient(c) && c.ran {
			r.repeats[c.key]-- // retrying a transient failure is not a repeat
			// The observation promised a retry; the round is not the last
			// idle one unless this failure withdraws the skill.
			out.retryPromised = r.failures[name]+1 < r.opts.MaxToolFailures
		}
		if c.obs.fail.counts {
			r.failures[name]++
			if r.failures[name] >= r.opts.MaxToolFailures && !r.withdrawn[name] {
				r.withdrawn[name] = true
				r.rebuildDefs()
				c.obs.text += fmt.Sprintf("\n%s has now failed %s and is withdrawn for the rest of this conversation; "+
					"do not call it again.", name, plural(r.failures[name], "time"))
				c.deltas = append(c.deltas, "tools withdrawn: "+name)
			}
		}
	}
	if fb := c.res.Fallback; fb != "" && c.err == nil {
		c.deltas = append(c.deltas, "answered by fallback skill "+fb)
	}
	if a := c.res.Async; a != nil && c.err == nil {
		r.result.AsyncTasks = append(r.result.AsyncTasks, AsyncStarted{Tool: name, TaskID: a.TaskID})
	}
	if c.stop != "" && out.stop == "" {
		out.stop, out.cause = c.stop, c.cause
		switch c.stop {
		case StopAwaitingConfirmation:
			pc := &PendingConfirmation{Tool: name, Args: c.args, Prompt: c.res.Confirm.Prompt}
			if s := c.res.Confirm.Skill; s != "" { // a fallback may be the one to confirm
				pc.Tool = s
			}
			if len(c.res.Confirm.Args) > 0 {
				pc.Args = c.res.Confirm.Args
			}
			r.result.PendingConfirmation = pc
			r.result.Reply = fmt.Sprintf(r.opts.Messages.Confirm, c.res.Confirm.Prompt)
		case StopNeedsInput:
			r.result.Reply = fmt.Sprintf(r.opts.Messages.NeedsInput, maskPII(c.obs.followup, &r.keep))
			r.result.Choices = c.obs.options
			for _, o := range c.obs.options { // listed, so typing one works where no buttons show
				r.result.Reply += "\n- " + o
			}
		}
	}
	r.result.Steps = append(r.result.Steps, r.toolStep(r.n, c))
}

// appendObservations gives the model the results, in call order: one tool
// message per call, or with text calls one user message holding them all
// (an endpoint without tool calls would reject "tool" messages).
func (r *run) appendObservations(results []*callResult, fromText bool) {
	if !fromText {
		for _, c := range results {
			r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: c.call.ID, Content: c.obs.text},
				msgObservation, c.call.Function.Name)
		}
		return
	}
	var b strings.Builder
	var names []string
	b.WriteString("[tool results]")
	for i, c := range results {
		fmt.Fprintf(&b, "\n\n### %d. %s\n%s", i+1, c.call.Function.Name, c.obs.text)
		names = append(names, c.call.Function.Name)
	}
	r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: b.String()},
		msgObservation, strings.Join(names, ","))
}
