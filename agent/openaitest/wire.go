package openaitest

import (
	"encoding/json"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// The response is written with these structs rather than go-openai's own
// types, so a test proves the client decodes what OpenAI sends (for
// instance "content": null next to tool_calls), not what go-openai would
// encode.

type wireResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []wireChoice `json:"choices"`
	Usage             wireUsage    `json:"usage"`
	SystemFingerprint *string      `json:"system_fingerprint"`
}

type wireChoice struct {
	Index        int         `json:"index"`
	Message      wireMessage `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

type wireMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type wireError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func (s *Server) response(req openai.ChatCompletionRequest, r Reply, requestBytes int) wireResponse {
	msg := wireMessage{Role: openai.ChatMessageRoleAssistant}
	if r.Content != "" || len(r.ToolCalls) == 0 {
		content := r.Content
		msg.Content = &content
	}
	finish := string(openai.FinishReasonStop)
	replyBytes := len(r.Content)
	for _, c := range r.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: c.ID, Type: string(openai.ToolTypeFunction),
			Function: wireFunction{Name: c.Function.Name, Arguments: c.Function.Arguments}})
		finish = string(openai.FinishReasonToolCalls)
		replyBytes += len(c.Function.Name) + len(c.Function.Arguments)
	}
	usage := wireUsage{PromptTokens: requestBytes/4 + 1, CompletionTokens: replyBytes/4 + 1}
	if r.Usage != nil {
		usage = wireUsage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens}
	}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	return wireResponse{
		ID:      "chatcmpl-openaitest",
		Object:  "chat.completion",
		Created: created,
		Model:   req.Model,
		Choices: []wireChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   usage,
	}
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	var e wireError
	e.Error.Message, e.Error.Type = msg, typ
	if code != "" {
		e.Error.Code = &code
	}
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
}
