package openaiapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// apiClient is a real OpenAI client pointed at the gateway.
func apiClient(h *gatewaytest.Harness, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = h.Srv.URL + "/v1"
	return openai.NewClientWithConfig(cfg)
}

// scriptLeave has the model call the leave-balance skill, then answer.
func scriptLeave(h *gatewaytest.Harness) {
	h.Model.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall(gatewaytest.LeaveTool, `{}`)}},
		openaitest.Reply{Content: gatewaytest.LeaveReply, Chunks: []string{"你今年", "还剩 12 天", "年假。"}},
	)
}

// startLeaveAPI runs a gateway with the API keys and the leave script.
func startLeaveAPI(t *testing.T) (*gatewaytest.Harness, context.Context) {
	h := gatewaytest.New(t)
	scriptLeave(h)
	h.StartExtra(gatewaytest.OpenAIYAML, gateway.Deps{})
	return h, gatewaytest.WithTimeout(t, 30*time.Second)
}

// TestOpenAIChatCompletion: a client's question runs the agent as the
// key's identity: the skill backend sees lisi, the answer and usage come
// back, and the turn is recorded as a run of the "api" channel.
func TestOpenAIChatCompletion(t *testing.T) {
	t.Parallel()
	h, ctx := startLeaveAPI(t)

	resp, err := apiClient(h, gatewaytest.APIKeyLisi).CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:    "hermes",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "我还有几天年假？"}},
		User:     "chat-42",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != gatewaytest.LeaveReply {
		t.Errorf("content = %q, want %q", got, gatewaytest.LeaveReply)
	}
	if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 || resp.Choices[0].FinishReason != openai.FinishReasonStop {
		t.Errorf("usage %+v, finish %q", resp.Usage, resp.Choices[0].FinishReason)
	}
	calls := h.Backend.Calls()
	if len(calls) != 1 || calls[0].Identity.UserID != "lisi" || calls[0].Identity.Channel != "api" {
		t.Fatalf("backend calls = %+v, want one as lisi over api", calls)
	}
	runID := strings.TrimPrefix(resp.ID, "chatcmpl-")
	if calls[0].RequestID != runID {
		t.Errorf("skill got X-Request-ID %q, want the run id %q", calls[0].RequestID, runID)
	}
	if n := h.Count(`SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id
		WHERE r.id = $1 AND s.channel = 'api' AND s.account = 'open-webui' AND s.chat_id = 'api:open-webui:lisi:chat-42' AND s.user_id = 'lisi'
		AND r.stop_reason = 'finished'`, runID); n != 1 {
		t.Errorf("run %s not recorded in session api/open-webui/api:open-webui:lisi:chat-42/lisi", runID)
	}
	if n := h.Count(`SELECT count(*) FROM run_steps WHERE run_id = $1 AND tool = $2`, runID, gatewaytest.LeaveTool); n != 1 {
		t.Errorf("tool step recorded %d times", n)
	}

	// The same session, the client sending only its new message: the
	// session's history is the model's context.
	h.Model.Script(openaitest.Reply{Content: "好的"})
	if _, err := apiClient(h, gatewaytest.APIKeyLisi).CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:    "hermes",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "谢谢"}},
		User:     "chat-42",
	}); err != nil {
		t.Fatal(err)
	}
	reqs := h.Model.Requests()
	last := reqs[len(reqs)-1]
	if !containsMessage(last.Messages, gatewaytest.LeaveReply) {
		t.Errorf("second turn's model request lacks the first answer: %+v", last.Messages)
	}
}

func containsMessage(msgs []openai.ChatCompletionMessage, text string) bool {
	for _, m := range msgs {
		if strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}

// TestOpenAIChatCompletionStream: the stream carries the tool's progress
// as reasoning_content, the answer as content deltas, a stop, the usage
// chunk asked for, and ends with [DONE].
func TestOpenAIChatCompletionStream(t *testing.T) {
	t.Parallel()
	h, ctx := startLeaveAPI(t)

	stream, err := apiClient(h, gatewaytest.APIKeyLisi).CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model:         "hermes",
		Messages:      []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "我还有几天年假？"}},
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var content, reasoning strings.Builder
	var usage *openai.Usage
	var finish openai.FinishReason
	deltas := 0
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				deltas++
			}
			content.WriteString(c.Delta.Content)
			reasoning.WriteString(c.Delta.ReasoningContent)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if content.String() != gatewaytest.LeaveReply || deltas < 2 {
		t.Errorf("content = %q in %d deltas, want %q streamed", content.String(), deltas, gatewaytest.LeaveReply)
	}
	if !strings.Contains(reasoning.String(), "正在调用") {
		t.Errorf("no tool progress in reasoning_content: %q", reasoning.String())
	}
	if finish != openai.FinishReasonStop || usage == nil || usage.TotalTokens == 0 {
		t.Errorf("finish %q usage %+v", finish, usage)
	}
	if calls := h.Backend.Calls(); len(calls) != 1 || calls[0].Identity.UserID != "lisi" {
		t.Errorf("backend calls = %+v, want one as lisi", calls)
	}
}

// TestOpenAIRefusals: a bad key is 401, a model the key may not use is
// 404, too many messages is 400 — each in OpenAI's error shape, and none
// reaches the model.
func TestOpenAIRefusals(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.StartExtra(gatewaytest.OpenAIYAML, gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	user := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "你好"}}
	many := make([]openai.ChatCompletionMessage, 5)
	for i := range many {
		many[i] = user[0]
	}
	for _, tc := range []struct {
		name   string
		key    string
		req    openai.ChatCompletionRequest
		status int
		code   string
	}{
		{"BadKey", "wrong-key-0123456789abcdef", openai.ChatCompletionRequest{Model: "hermes", Messages: user}, 401, "invalid_api_key"},
		{"UnknownModel", gatewaytest.APIKeyLisi, openai.ChatCompletionRequest{Model: "gpt-4o", Messages: user}, 404, "model_not_found"},
		{"ModelNotForKey", gatewaytest.APIKeyOnly, openai.ChatCompletionRequest{Model: "hermes", Messages: user}, 404, "model_not_found"},
		{"TooManyMessages", gatewaytest.APIKeyLisi, openai.ChatCompletionRequest{Model: "hermes", Messages: many}, 400, ""},
		{"LastNotUser", gatewaytest.APIKeyLisi, openai.ChatCompletionRequest{Model: "hermes",
			Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleAssistant, Content: "hi"}}}, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := apiClient(h, tc.key).CreateChatCompletion(ctx, tc.req)
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want an API error", err)
			}
			if apiErr.HTTPStatusCode != tc.status || apiErr.Message == "" || apiErr.Type != "invalid_request_error" {
				t.Errorf("got %d %+v, want %d", apiErr.HTTPStatusCode, apiErr, tc.status)
			}
			if tc.code != "" && apiErr.Code != tc.code {
				t.Errorf("code = %v, want %s", apiErr.Code, tc.code)
			}
		})
	}
	t.Run("BodyTooLarge", func(t *testing.T) {
		body := `{"model":"hermes","messages":[{"role":"user","content":"` + strings.Repeat("a", 1<<20) + `"}]}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.Srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+gatewaytest.APIKeyLisi)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"error":{"message":"body over`) ||
			!strings.Contains(string(b), `"param":null`) || !strings.Contains(string(b), `"code":null`) {
			t.Errorf("oversized body: %d %s", resp.StatusCode, b)
		}
	})
	if n := len(h.Model.Requests()); n != 0 {
		t.Errorf("refused requests reached the model %d times", n)
	}

	t.Run("Models", func(t *testing.T) {
		list, err := apiClient(h, gatewaytest.APIKeyOnly).ListModels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Models) != 1 || list.Models[0].ID != "hermes-lite" {
			t.Errorf("models = %+v, want only hermes-lite", list.Models)
		}
	})
}
