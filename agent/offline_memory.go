package agent

import (
	"encoding/json"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// The offline model's part in long-term memory (gateway/memory), so that
// `hermes demo` shows it without a real model: it answers the extraction
// call (a JSON-object request whose system prompt asks for "memories")
// with the clauses in which the user states something about themselves,
// and it says which of the user's notes it was given.

// offlineStatementStarts begin a clause the offline model extracts.
var offlineStatementStarts = []string{"我在", "我负责", "我是", "叫我", "我用", "我习惯"}

// isMemoryExtraction reports whether req is the memory extraction call.
func isMemoryExtraction(req openai.ChatCompletionRequest) bool {
	return req.ResponseFormat != nil && req.ResponseFormat.Type == openai.ChatCompletionResponseFormatTypeJSONObject &&
		len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `{"memories"`)
}

// offlineMemories are text's statements about its writer, as the
// extraction's JSON: 「我负责华东区的销售，以后回复简短些」 → 负责华东区的销售.
func offlineMemories(text string) string {
	type memory struct {
		Text string `json:"text"`
	}
	out := struct {
		Memories []memory `json:"memories"`
	}{Memories: []memory{}}
	for _, clause := range strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune("，。；！,.;!\n", r) }) {
		clause = strings.TrimSpace(clause)
		for _, start := range offlineStatementStarts {
			if strings.HasPrefix(clause, start) && len(out.Memories) < 3 {
				out.Memories = append(out.Memories, memory{Text: strings.TrimPrefix(clause, "我")})
				break
			}
		}
	}
	b, _ := json.Marshal(out) // strings only: it always marshals
	return string(b)
}

// offlineNotes are the note lines of a system prompt's <USER_NOTES>, ""
// when it has none.
func offlineNotes(msgs []openai.ChatCompletionMessage) string {
	if len(msgs) == 0 || msgs[0].Role != openai.ChatMessageRoleSystem {
		return ""
	}
	_, block, ok := strings.Cut(msgs[0].Content, "<USER_NOTES>")
	if !ok {
		return ""
	}
	block, _, _ = strings.Cut(block, "</USER_NOTES>")
	var notes []string
	for _, line := range strings.Split(block, "\n") {
		if note, ok := strings.CutPrefix(line, "- "); ok {
			notes = append(notes, note)
		}
	}
	return strings.Join(notes, "；")
}
