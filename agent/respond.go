package agent

import (
	"strings"
	"text/template"

	openai "github.com/sashabaranov/go-openai"
)

// answer is the model's answer to the task, the current subtask, the
// composition or the format fix.
type answer struct {
	text   string
	failed bool   // finish with status "failed"
	reason string // why, when failed
}

// answerOf returns the model's answer when it gave one: text without tool
// calls, or a finish call on its own. The answer joins the conversation,
// since the loop may go on (next subtask, format fix) or be resumed.
func (r *run) answerOf(msg openai.ChatCompletionMessage, calls []proposedCall, fromText bool) (answer, bool) {
	switch {
	case len(calls) == 0:
		r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content}, msgOther, "")
		return answer{text: strings.TrimSpace(msg.Content)}, true
	case len(calls) == 1 && calls[0].known && calls[0].call.Function.Name == toolFinish:
		call := calls[0].call
		f := parseFinish(call.Function.Arguments)
		a := answer{text: strings.TrimSpace(f.Answer), failed: f.Status == SubtaskFailed}
		if a.failed {
			a.reason = cutHead(a.text, 200)
		}
		if fromText {
			r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content}, msgOther, "")
		} else {
			// Every tool call is answered, so the conversation stays valid
			// if it goes on.
			r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: msg.Content,
				ToolCalls: []openai.ToolCall{call}}, msgOther, "")
			r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Content: "recorded"}, msgOther, "")
		}
		return a, true
	}
	return answer{}, false
}

// next decides what follows an answer and reports whether the loop goes
// on: the next subtask, composing the subtasks' results, or one request to
// fix the answer's format. Otherwise r.final is the answer to send.
func (r *run) next(a answer) bool {
	switch r.phase {
	case phaseWork:
		if r.multi() {
			status := SubtaskDone
			if a.failed {
				status = SubtaskFailed
			}
			if r.endSubtask(SubtaskResult{Status: status, Answer: a.text, Reason: a.reason}) {
				return true
			}
		}
		r.final = a.text
		if reply, ok := r.templateReply(); ok {
			r.final = reply
			return false // the skill's own wording: no format check
		}
		if again, replaced := r.checkAnswer(); again || replaced {
			return again
		}
	case phaseCompose:
		r.final = a.text
		if again, replaced := r.checkAnswer(); again || replaced {
			return again
		}
	case phaseFormat:
		if a.text != "" { // an empty "fix" does not replace the answer
			r.final = a.text
		}
		return false
	}
	if r.final != "" && !formatOK(r.format, r.final) {
		r.phase, r.freeNext = phaseFormat, true
		r.note("answer is not a %s; asked once to fix it", r.format)
		r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: formatFixRequest(r.format)}, msgOther, "")
		r.emit(Event{Kind: EventStage, Text: StageFormat})
		return true
	}
	return false
}

// templateReply renders the answer from a skill's response template
// instead of the model's words. It applies when the latest tool round had
// exactly one call, to a skill with Spec.ResponseTemplate, which succeeded
// with a JSON answer: the model's final answer would only restate that
// answer, and the skill's owner chose how it should read. The template
// sees the sanitised JSON (debug fields dropped, numbers masked unless
// safe); a missing key or any other template error falls back to the
// model's answer.
func (r *run) templateReply() (string, bool) {
	if len(r.lastRound) != 1 || r.multi() {
		return "", false
	}
	c := r.lastRound[0]
	if c.entry == nil || c.entry.spec.ResponseTemplate == "" || !c.obs.ok || c.obs.doc == nil {
		return "", false
	}
	name := c.entry.spec.Name
	tpl, err := template.New(name).Option("missingkey=error").Parse(c.entry.spec.ResponseTemplate)
	var b strings.Builder
	if err == nil {
		err = tpl.Execute(&b, c.obs.doc.toAny())
	}
	reply := strings.TrimSpace(b.String())
	if err != nil || reply == "" {
		r.note("response template of %s not used: %v", name, err)
		return "", false
	}
	r.note("answer rendered from the response template of %s", name)
	return reply, true
}
