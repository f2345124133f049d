package openaitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Stream chunks, written with local structs for the same reason as the
// response: the test proves the client reads OpenAI's wire format.

type wireChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []wireChunkChoice `json:"choices"`
	Usage   *wireUsage        `json:"usage"`
}

type wireChunkChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type wireDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []wireCallDelta `json:"tool_calls,omitempty"`
}

type wireCallDelta struct {
	Index    int              `json:"index"`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function wireFuncFragment `json:"function"`
}

type wireFuncFragment struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// writeStream answers a stream=true request as server-sent events.
func writeStream(ctx context.Context, w http.ResponseWriter, req openai.ChatCompletionRequest, r Reply, resp wireResponse) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(c wireChunk) {
		c.ID, c.Object, c.Created, c.Model = resp.ID, "chat.completion.chunk", created, req.Model
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	delta := func(d wireDelta) wireChunk {
		return wireChunk{Choices: []wireChunkChoice{{Index: 0, Delta: d}}}
	}

	empty := ""
	send(delta(wireDelta{Role: openai.ChatMessageRoleAssistant, Content: &empty}))
	pieces := r.Chunks
	if len(pieces) == 0 {
		pieces = splitRunes(r.Content, 3)
	}
	for i, p := range pieces {
		if i > 0 && r.ChunkInterval > 0 {
			select {
			case <-time.After(r.ChunkInterval):
			case <-ctx.Done():
				return
			}
		}
		send(delta(wireDelta{Content: &p}))
	}
	for i, c := range resp.Choices[0].Message.ToolCalls {
		send(delta(wireDelta{ToolCalls: []wireCallDelta{{Index: i, ID: c.ID, Type: c.Type,
			Function: wireFuncFragment{Name: c.Function.Name}}}}))
		for _, frag := range splitRunes(c.Function.Arguments, 5) {
			send(delta(wireDelta{ToolCalls: []wireCallDelta{{Index: i, Function: wireFuncFragment{Arguments: frag}}}}))
		}
	}
	finish := resp.Choices[0].FinishReason
	send(wireChunk{Choices: []wireChunkChoice{{Index: 0, Delta: wireDelta{}, FinishReason: &finish}}})
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		usage := resp.Usage
		send(wireChunk{Choices: []wireChunkChoice{}, Usage: &usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// splitRunes cuts s into pieces of n runes, so multi-byte text arrives in
// several chunks like it does from real endpoints.
func splitRunes(s string, n int) []string {
	var out []string
	runes := []rune(s)
	for len(runes) > 0 {
		k := min(n, len(runes))
		out = append(out, string(runes[:k]))
		runes = runes[k:]
	}
	return out
}
