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

func isBuiltin(name string) bool {
	return name == toolFinish || name == toolRecall || name == toolLoadSkills
}

// finishDef is sent with every request that has tools, so its text is
// kept short: each word here is paid on every model call.
var finishDef = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name:        toolFinish,
	Description: "Call alone when the task (or subtask) is complete, with the answer. If it cannot be done, status \"failed\" and say why.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"},` +
		`"status":{"type":"string","enum":["done","failed"]}},"required":["answer"]}`),
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
