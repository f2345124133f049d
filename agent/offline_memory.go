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

// offlineNotes are the user's notes that the last user message carries
// before its request, joined; "" when it has none.
func offlineNotes(msgs []openai.ChatCompletionMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != openai.ChatMessageRoleUser {
			continue
		}
		text := msgs[i].Content
		if len(msgs[i].MultiContent) > 0 {
			text = msgs[i].MultiContent[0].Text
		}
		notes, _ := splitNotes(text)
		return strings.Join(notes, "；")
	}
	return ""
}

// splitNotes separates a user message into the notes fenced before its
// request (notesBlock) and the request.
func splitNotes(text string) (notes []string, request string) {
	rest, ok := strings.CutPrefix(text, notesOpen+"\n")
	if !ok {
		return nil, text
	}
	block, request, ok := strings.Cut(rest, "\n"+notesClose)
	if !ok {
		return nil, text
	}
	if i := strings.LastIndexByte(block, '\n'); i >= 0 {
		_ = json.Unmarshal([]byte(block[i+1:]), &notes) // the array we wrote
	}
	return notes, strings.TrimPrefix(request, "\n\n")
}
