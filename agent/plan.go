package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// The plan stage (Options.Plan, seed 002 §2.1) turns an open request into a
// goal, constraints, an output format and, for a request with several
// parts, a short list of subtasks. The plan goes into the system prompt, so
// every later step sees the same boundaries. Subtasks run in order in the
// one loop; a subtask that fails (its step budget, repeated calls, idle
// rounds, or the model's finish with status "failed") is recorded and the
// next one starts; a last model call joins the results (seed 004 §5.4).

// Plan is the request as the plan stage understood it.
type Plan struct {
	Goal         string   `json:"goal"`
	Constraints  []string `json:"constraints,omitempty"`
	OutputFormat string   `json:"output_format,omitempty"`
	Subtasks     []string `json:"subtasks,omitempty"`
}

// Subtask outcomes.
const (
	SubtaskDone   = "done"
	SubtaskFailed = "failed"
)

// SubtaskResult is how one subtask ended.
type SubtaskResult struct {
	Task   string `json:"task"`
	Status string `json:"status"`           // SubtaskDone or SubtaskFailed
	Answer string `json:"answer,omitempty"` // what the model answered for it
	Reason string `json:"reason,omitempty"` // why it failed: a stop reason or the model's words
}

// phase is where the loop is in finishing a task.
type phase int

const (
	phaseWork    phase = iota // working on the task or the current subtask
	phaseCompose              // joining the subtasks' results
	phaseFormat               // the answer was sent back once to fix its format
)

const planPrompt = `You turn a chat request into a plan; you do not answer it. Reply with only one JSON object:
{"goal": "what the user wants, one sentence", "constraints": ["conditions the answer must meet"], "output_format": "the form the user asked for, e.g. markdown table, numbered list, JSON; empty for a plain answer", "subtasks": ["..."]}
"subtasks" has 1 to %d short items, in order. Use several only when the request asks for several distinct things; otherwise give one item equal to the goal.`

// block is the plan as it appears in the system prompt.
func (p *Plan) block() string {
	var b strings.Builder
	b.WriteString("<TASK>\nGoal: " + p.Goal)
	if len(p.Constraints) > 0 {
		b.WriteString("\nConstraints:")
		for _, c := range p.Constraints {
			b.WriteString("\n- " + c)
		}
	}
	if p.OutputFormat != "" {
		b.WriteString("\nOutput format: " + p.OutputFormat)
	}
	if len(p.Subtasks) > 1 {
		b.WriteString("\nSubtasks (work on one at a time, in order; when the current one is done, answer it or call finish, and the next one will follow):")
		for i, s := range p.Subtasks {
			fmt.Fprintf(&b, "\n%d. %s", i+1, s)
		}
		b.WriteString("\nStart with subtask 1.")
	}
	b.WriteString("\n</TASK>")
	return b.String()
}

// parsePlan reads the plan stage's answer. Errors say what was wrong, for
// the one retry.
func parsePlan(content string, maxSubtasks int) (*Plan, error) {
	raw := extractJSONObject(content)
	if raw == "" {
		return nil, errors.New("no JSON object found")
	}
	var p Plan
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, fmt.Errorf("not the expected JSON: %w", err)
	}
	p.Goal = strings.TrimSpace(p.Goal)
	if p.Goal == "" {
		return nil, errors.New(`"goal" is empty`)
	}
	var subs []string
	for _, s := range p.Subtasks {
		if s = strings.TrimSpace(s); s != "" {
			subs = append(subs, s)
		}
	}
	if len(subs) > maxSubtasks {
		return nil, fmt.Errorf("%d subtasks; at most %d", len(subs), maxSubtasks)
	}
	if len(subs) == 0 {
		subs = []string{p.Goal}
	}
	p.Subtasks = subs
	return &p, nil
}

// extractJSONObject finds the first JSON object in s, inside a ``` fence
// or not.
func extractJSONObject(s string) string {
	for i := strings.IndexByte(s, '{'); i >= 0; {
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var obj map[string]json.RawMessage
		if dec.Decode(&obj) == nil {
			return s[i : i+int(dec.InputOffset())]
		}
		j := strings.IndexByte(s[i+1:], '{')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return ""
}

// planStage asks for the plan, with one retry that says what was wrong.
// It returns a stop reason when the request cannot be planned (or the
// model fails), "" to go on.
func (r *run) planStage(ctx context.Context) (string, error) {
	if !r.opts.Plan || r.turn.Resume != nil {
		return "", nil
	}
	r.emit(Event{Kind: EventStage, Text: StagePlan})
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: fmt.Sprintf(planPrompt, r.opts.MaxSubtasks)}}
	msgs = append(msgs, textHistory(r.turn.History)...)
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: r.goal})
	var lastErr error
	for attempt := range 2 { // the first answer and one retry (seed 002 §2.1)
		msg, err := r.ask(ctx, openai.ChatCompletionRequest{Model: r.opts.Model, Messages: msgs}, stepInfo{stage: StagePlan})
		if err != nil {
			return StopError, err
		}
		plan, perr := parsePlan(msg.Content, r.opts.MaxSubtasks)
		if perr == nil {
			r.plan, r.result.Plan = plan, plan
			r.format = requestedFormat(r.goal, plan)
			r.note("plan: %d subtask(s), output format %q", len(plan.Subtasks), plan.OutputFormat)
			if len(plan.Subtasks) > 1 {
				r.emit(Event{Kind: EventStage, Text: fmt.Sprintf("subtask 1/%d", len(plan.Subtasks))})
			}
			return "", nil
		}
		lastErr = perr
		r.note("plan attempt %d rejected: %v", attempt+1, perr)
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
				Content: fmt.Sprintf("That was not usable (%v). Reply with only the JSON object described.", perr)})
	}
	return StopPlanRefused, lastErr
}

// multi reports a plan with several subtasks.
func (r *run) multi() bool { return r.plan != nil && len(r.plan.Subtasks) > 1 }

// endSubtask records how the current subtask ended and moves on: to the
// next subtask, or to composing the answer. It returns false when there is
// nothing to move on to (no plan with several subtasks, or no subtask
// produced anything to compose).
func (r *run) endSubtask(res SubtaskResult) bool {
	if !r.multi() || r.phase != phaseWork {
		return false
	}
	res.Task = r.plan.Subtasks[r.sub]
	r.subs = append(r.subs, res)
	r.result.Subtasks = r.subs
	r.note("subtask %d %s", r.sub+1, res.Status)
	r.taskSteps, r.idle, r.retry, r.freeNext = 0, 0, 0, false
	clear(r.repeats)
	if r.sub+1 < len(r.plan.Subtasks) {
		r.sub++
		text := fmt.Sprintf("[Hermes] Subtask %d/%d: %s\nWork on this subtask now; when it is done, answer it or call finish.",
			r.sub+1, len(r.plan.Subtasks), r.plan.Subtasks[r.sub])
		if res.Status == SubtaskFailed {
			text = fmt.Sprintf("[Hermes] Subtask %d stopped without a result (%s); it is recorded as failed.\n", r.sub, res.Reason) + text
		}
		r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text}, msgOther, "")
		r.emit(Event{Kind: EventStage, Text: fmt.Sprintf("subtask %d/%d", r.sub+1, len(r.plan.Subtasks))})
		return true
	}
	return r.startCompose()
}

// failSubtask ends the current subtask as failed for a stop reason that is
// scoped to it; false when the whole run must stop instead.
func (r *run) failSubtask(reason string) bool {
	return r.endSubtask(SubtaskResult{Status: SubtaskFailed, Reason: reason})
}

// startCompose asks the model for the final answer from the subtasks'
// results, failures included so the answer can say what is missing.
func (r *run) startCompose() bool {
	answered := false
	var b strings.Builder
	b.WriteString("[Hermes] All subtasks have ended. Results:")
	for i, s := range r.subs {
		if s.Answer != "" {
			answered = true
		}
		if s.Status == SubtaskDone {
			fmt.Fprintf(&b, "\n%d. %s — done: %s", i+1, s.Task, s.Answer)
		} else {
			fmt.Fprintf(&b, "\n%d. %s — FAILED (%s) %s", i+1, s.Task, s.Reason, s.Answer)
		}
	}
	if !answered {
		return false
	}
	b.WriteString("\nNow write the final answer to the original request")
	if r.plan.OutputFormat != "" {
		b.WriteString(" in the requested output format (" + r.plan.OutputFormat + ")")
	}
	b.WriteString(". Say plainly which parts could not be done. Do not call tools.")
	r.phase, r.taskSteps = phaseCompose, 0
	r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: b.String()}, msgOther, "")
	r.emit(Event{Kind: EventStage, Text: StageCompose})
	return true
}
