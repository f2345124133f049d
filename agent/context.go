package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The system prompt is built once per run and then never changes, so every
// request of the run starts with the same bytes and endpoint prompt caches
// hit. It holds, in order: the deployment's prompt (Turn.SystemPrompt), the
// agent's rules, the compact skill index when it is on (index.go), and the
// plan when there is one.
//
// It says each thing once: a skill's description and parameters travel in
// the tools block only (seed 000 §2.1's skill context, repeated here,
// cost more than the tools themselves). Only an endpoint without native
// tool calls gets the definitions here, since it has no tools block.

// agentRules are the rules every run adds. "Answer in the user's
// language" matters because the deployment prompt is often Chinese while
// tool results are English or JSON.
const agentRules = `Rules:
- Answer in the user's language.`

// toolRules are added when skills are offered.
const toolRules = `
- Company data comes only from your tools. Never invent a tool result; if a tool fails, say what failed.
- Ask the user when a required value is missing instead of guessing it.
- When the task is done, answer directly, or call the finish tool with the answer.`

const textCallRules = `Tool calls: this endpoint has no native tool calls. To call a tool, reply with only this JSON and nothing else:
` + "```json" + `
{"tool": "<tool name>", "arguments": {<arguments>}}
` + "```" + `
Results come back in a message starting with "[tool results]". To finish, answer in plain text.`

// buildSystemPrompt assembles the system prompt; index is the skill index
// block, "" when the index is off.
func buildSystemPrompt(base string, entries []*toolEntry, index string, textCalls bool, plan *Plan) string {
	var b strings.Builder
	if base = strings.TrimSpace(base); base != "" {
		b.WriteString(base)
		b.WriteString("\n\n")
	}
	b.WriteString(agentRules)
	if len(entries) > 0 || index != "" {
		b.WriteString(toolRules)
	}
	if index != "" {
		b.WriteString("\n\n" + index)
	}
	if textCalls {
		if len(entries) > 0 {
			b.WriteString("\n\n<TOOLS>")
			for _, e := range entries {
				b.WriteString("\n\n" + textDefinition(e))
			}
			b.WriteString("\n</TOOLS>")
		}
		b.WriteString("\n\n" + textCallRules)
	}
	if plan != nil {
		b.WriteString("\n\n" + plan.block())
	}
	return b.String()
}

// notesBlock is the user's notes (Turn.Notes) as data: the heading, then
// the notes as one JSON array inside <USER_NOTES>. They are put before the
// request in the user's message (withNotes), not in the system prompt: the
// model takes the system prompt as instructions, and a note is only what
// a user once said. JSON escapes '<' and '>' (as \u003c, \u003e), so a
// note holding "</USER_NOTES>" or "<system>" stays inside its string.
func notesBlock(n Notes) string {
	items := make([]string, 0, len(n.Items))
	for _, it := range n.Items {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return ""
	}
	list, _ := json.Marshal(items) // strings only: it always marshals; HTML-escaped
	return notesOpen + "\n" + strings.TrimSpace(n.Heading) + "\n" + string(list) + "\n" + notesClose
}

// The fence of the user's notes in the user's message.
const (
	notesOpen  = "<USER_NOTES>"
	notesClose = "</USER_NOTES>"
)

// textDefinition is a tool as text, for endpoints without a tools block.
func textDefinition(e *toolEntry) string {
	return fmt.Sprintf("### %s\n%s\nParameters (JSON Schema): %s", e.spec.Name, e.def.Function.Description, compactJSON(e.params))
}

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
