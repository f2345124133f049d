package agent

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"
)

// Built-in tools are answered by the loop itself, never by a skill.
const (
	// toolFinish ends the task (or the current subtask) with an answer: a
	// deterministic stop signal, cheaper to check than parsing prose (seed
	// 001 §4.1, seed 002 §2.5).
	toolFinish = "finish"
	// toolRecall fetches an observation that compression archived.
	toolRecall = "recall_observation"
)

func isBuiltin(name string) bool { return name == toolFinish || name == toolRecall }

var finishDef = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name: toolFinish,
	Description: "Call this alone when the task (or the current subtask) is complete, with the answer for the user. " +
		"If it cannot be done, call it with status \"failed\" and explain in the answer what could not be done and why.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","description":"the answer for the user, in the user's language"},` +
		`"status":{"type":"string","enum":["done","failed"],"description":"done (default) or failed"}},"required":["answer"]}`),
}}

var recallDef = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name: toolRecall,
	Description: "Fetch the full text of an earlier tool result that was shortened to save space; " +
		"the shortened result shows \"[archived: REF]\". Use it only when the summary is not enough.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string","description":"the REF from [archived: REF]"}},"required":["ref"],"additionalProperties":false}`),
}}

// finishArgs are the arguments of a finish call.
type finishArgs struct {
	Answer string `json:"answer"`
	Status string `json:"status"`
}

// parseFinish reads a finish call's arguments; text that is not the
// expected object is taken as the answer itself, since models under a
// weak tool-calling template sometimes pass a bare string.
func parseFinish(args string) finishArgs {
	var f finishArgs
	if err := json.Unmarshal([]byte(args), &f); err != nil {
		var s string
		if json.Unmarshal([]byte(args), &s) == nil {
			return finishArgs{Answer: s}
		}
		return finishArgs{Answer: args}
	}
	return f
}
