package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// isOneOf reports whether answer (a bareAnswer) is one of words.
func isOneOf(answer string, words []string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return bareAnswer(w) == answer })
}

// bareAnswer is the user's text without spaces and punctuation, lower-cased.
func bareAnswer(text string) string {
	return strings.ToLower(strings.TrimFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsPunct(r) // 「确认」, 确认！ and " 确认。" all count
	}))
}

// confirmSubject is what a confirmation prompt asks about, without the
// question and instructions that follow it ("重置 zhangsan 的 vpn 密码？…").
func confirmSubject(prompt string) string {
	if i := strings.IndexAny(prompt, "？?"); i > 0 {
		return strings.TrimSpace(prompt[:i])
	}
	return strings.TrimSpace(prompt)
}

// confirmResult is what resolving a confirmation produced.
type confirmResult struct {
	done    bool   // the message is fully answered by text
	text    string // the reply, or a note to put before the agent's answer
	run     *store.RunRecord
	steps   []store.StepRecord
	pending *store.Pending // a new confirmation the session waits for
	settle  *cardSettle    // the outcome its cards show
}

// resolveConfirmation handles the user's next message after a skill call
// asked for confirmation. The pending call is claimed (deleted and
// committed) before it runs, so a crash can never run it twice: a
// confirmed action happens at most once.
func (rn *runner) resolveConfirmation(ctx context.Context, row store.InboundRow, sessionID int64,
	caller skills.Caller) (confirmResult, error) {
	p, ok, err := store.TakePending(ctx, rn.pool, sessionID)
	if err != nil || !ok {
		return confirmResult{}, err
	}
	var pc agent.PendingConfirmation
	if err := json.Unmarshal(p.Payload, &pc); err != nil {
		rn.log.Error("unreadable pending confirmation dropped", "session_id", sessionID, "err", err)
		return confirmResult{}, nil
	}
	subject := confirmSubject(pc.Prompt)
	answer := bareAnswer(row.In.Text)
	words := rn.cfg.Messages.Cards
	switch {
	case !isOneOf(answer, rn.cfg.Messages.ConfirmWords):
		cancelled := fmt.Sprintf(rn.cfg.Messages.Cancelled, subject)
		// A plain "no" is answered here; anything else is a new request the
		// agent answers after the note.
		return confirmResult{done: isOneOf(answer, rn.cfg.Messages.CancelWords), text: cancelled,
			settle: &cardSettle{runID: p.RunID, action: channels.ActionCancel, title: words.Cancelled, text: cancelled}}, nil
	case !rn.now().Before(p.ExpiresAt):
		late := fmt.Sprintf(rn.cfg.Messages.ConfirmLate, subject)
		return confirmResult{done: true, text: late,
			settle: &cardSettle{runID: p.RunID, action: channels.ActionConfirm, title: words.Expired, text: late}}, nil
	}

	// The call serves the message that asked for it: its attachments go
	// to a skill that takes files.
	if asked, err := store.GetRun(ctx, rn.pool, p.RunID); err == nil && asked.InboundID != 0 {
		caller.FilesOf = skills.InboundID(asked.InboundID)
	}
	started := rn.now()
	res, callErr := rn.callConfirmed(ctx, row.In, caller, pc.Tool, pc.Args)
	if callErr != nil && ctx.Err() != nil {
		return confirmResult{}, callErr // shutting down; the claim is spent, the user asks again
	}
	// Stored and shown masked, like the agent's own tool steps.
	step := store.StepRecord{Step: 1, Kind: agent.StepTool, Tool: pc.Tool, Args: agent.MaskedArgs(string(pc.Args)),
		Latency: rn.now().Sub(started)}
	cr := confirmResult{done: true}
	stop := StopConfirmed
	switch {
	case callErr != nil:
		step.Error = callErr.Error()
		cr.text = fmt.Sprintf(rn.cfg.Messages.ConfirmFail, subject, userFacingError(callErr, rn.cfg.Messages.SkillErrors))
	case res.Confirm != nil:
		// The breaker is open and the fallback needs its own 「确认」:
		// nothing ran, so nothing is reported as executed. Its prompt is
		// rendered from the arguments: masked like any reply.
		res.Confirm.Prompt = agent.MaskedText(res.Confirm.Prompt)
		step.Observation = "not executed: " + pc.Tool + " is unavailable; its fallback " + res.Confirm.Skill + " awaits confirmation"
		cr.text = fmt.Sprintf(rn.cfg.Messages.ConfirmFallback, subject, res.Confirm.Prompt)
		cr.pending = rn.fallbackPending(sessionID, caller.TraceID, res.Confirm)
		stop = agent.StopAwaitingConfirmation
	default:
		masked := agent.MaskedResult(res, rn.skills.Load().Spec(res.Skill), 0)
		step.Observation = masked
		cr.text = fmt.Sprintf(rn.cfg.Messages.Confirmed, resultSummary(masked, subject))
	}
	cr.settle = &cardSettle{runID: p.RunID, action: channels.ActionConfirm, title: words.Confirmed, text: cr.text}
	cr.run = &store.RunRecord{ID: caller.TraceID, SessionID: sessionID, InboundID: row.ID, Model: "confirmation",
		StopReason: stop, Reply: cr.text, StartedAt: started, FinishedAt: rn.now()}
	cr.steps = []store.StepRecord{step}
	return cr, nil
}

// StopConfirmed is the stop reason of a run that executed a confirmed call
// (long-term memory keeps the outcome of the successful ones).
const StopConfirmed = "confirmed"

// fallbackPending is the confirmation a fallback skill waits for.
func (rn *runner) fallbackPending(sessionID int64, runID string, c *skills.Confirmation) *store.Pending {
	payload, err := json.Marshal(agent.PendingConfirmation{Tool: c.Skill, Args: c.Args, Prompt: c.Prompt})
	if err != nil {
		return nil // a RawMessage that came from validation marshals
	}
	now := rn.now()
	return &store.Pending{SessionID: sessionID, Kind: store.PendingConfirm, Payload: payload, RunID: runID,
		CreatedAt: now, ExpiresAt: now.Add(rn.cfg.Agent.ConfirmTimeout)}
}

// resultSummary is the line a backend meant for the user ("summary" or
// "message" in a JSON answer), else what was done. masked is the answer
// as agent.MaskedResult shows it.
func resultSummary(masked, subject string) string {
	var m map[string]any
	if json.Unmarshal([]byte(masked), &m) == nil {
		for _, k := range []string{"summary", "message"} {
			if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
				return s
			}
		}
	}
	return subject
}

// callConfirmed runs a call the user confirmed: a feature's tool (its
// CallConfirmed), or a skill through the registry.
func (rn *runner) callConfirmed(ctx context.Context, in channels.Inbound, caller skills.Caller, tool string, args json.RawMessage) (skills.Result, error) {
	for _, f := range rn.features {
		if tf, ok := f.(ChatToolFeature); ok {
			if res, handled, err := tf.CallConfirmed(ctx, in, caller, tool, args); handled {
				return res, err
			}
		}
	}
	return rn.skills.Load().CallConfirmed(ctx, caller, tool, args)
}

// A UserFacing error carries the sentence the user is told as it is when
// a confirmed call fails with it (a report refused by a limit of reports
// made in chat): written for them, in their language, without internals.
type UserFacing interface {
	error
	UserSentence() string
}

// userFacingError says why a skill call failed without internals.
func userFacingError(err error, words config.SkillErrorMessages) string {
	var he *skills.HTTPError
	var uf UserFacing
	switch {
	case errors.As(err, &uf):
		return strings.TrimSuffix(uf.UserSentence(), "。") // the message adds its own
	case errors.As(err, &he) && he.Body != "":
		return he.Body
	case errors.Is(err, skills.ErrAccessDenied):
		return words.Denied
	case errors.Is(err, skills.ErrUnavailable):
		return words.Unavailable
	default:
		return words.Other
	}
}
