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
// agent's rules, the context of the skills offered this turn (seed 000
// §2.1: description, parameter schema, example requests, inside
// <SKILL_CONTEXT>), the text-call instructions when native tools are off,
// and the plan when there is one.

// agentRules are the rules every run adds. "Answer in the user's
// language" matters because the deployment prompt is often Chinese while
// tool results are English or JSON.
const agentRules = `Rules:
- Answer in the user's language.`

// toolRules are added when skills are offered.
const toolRules = `
- Company data comes only from the tools below. Never invent a tool result; if a tool fails, say what failed.
- Use only the tools offered. Ask the user when a required value is missing instead of guessing it.
- When the task is done, answer directly, or call the finish tool with the answer.`

const textCallRules = `Tool calls: this endpoint has no native tool calls. To call a tool, reply with only this JSON and nothing else:
` + "```json" + `
{"tool": "<tool name>", "arguments": {<arguments>}}
` + "```" + `
Results come back in a message starting with "[tool results]". To finish, answer in plain text.`

// buildSystemPrompt assembles the system prompt.
func buildSystemPrompt(base string, entries []*toolEntry, textCalls bool, plan *Plan) string {
	var b strings.Builder
	if base = strings.TrimSpace(base); base != "" {
		b.WriteString(base)
		b.WriteString("\n\n")
	}
	b.WriteString(agentRules)
	if len(entries) > 0 {
		b.WriteString(toolRules)
		b.WriteString("\n\n<SKILL_CONTEXT>\nTools offered for this message:")
		for _, e := range entries {
			fmt.Fprintf(&b, "\n\n### %s\n%s\nParameters (JSON Schema): %s", e.spec.Name,
				strings.TrimSpace(e.spec.Description), compactJSON(e.params))
			if e.spec.Confirm {
				b.WriteString("\nIt asks the user to confirm before anything happens.")
			}
			if e.spec.Async {
				b.WriteString("\nIt usually runs in the background; the result is sent to the chat later.")
			}
			if len(e.spec.Examples) > 0 {
				b.WriteString("\nExample requests: ")
				for i, ex := range e.spec.Examples {
					if i > 0 {
						b.WriteString(" / ")
					}
					b.WriteString(strings.TrimSpace(ex))
				}
			}
		}
		b.WriteString("\n</SKILL_CONTEXT>")
	}
	if textCalls {
		b.WriteString("\n\n" + textCallRules)
	}
	if plan != nil {
		b.WriteString("\n\n" + plan.block())
	}
	return b.String()
}

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
