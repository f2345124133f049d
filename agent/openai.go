package agent

import (
	"context"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// DefaultModelTimeout bounds one model call when OpenAIConfig.Timeout is 0.
// Run's wall clock (90s by default) still bounds the whole run.
const DefaultModelTimeout = 60 * time.Second

// OpenAIConfig configures a model reached over the OpenAI chat completions
// API: OpenAI itself, DeepSeek, Qwen (DashScope compatible mode), vLLM,
// Ollama and others.
type OpenAIConfig struct {
	// BaseURL of the API including the version path, e.g.
	// "https://api.deepseek.com/v1" or "http://localhost:11434/v1".
	// Default: OpenAI's.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". Local servers often
	// need none.
	APIKey string
	// Timeout of one HTTP call to the model, default DefaultModelTimeout.
	Timeout time.Duration
	// Model is used when a request names none (Options.Model empty).
	Model string
	// HTTPClient replaces the default client (proxies, tests). Its own
	// Timeout wins over Timeout when set.
	HTTPClient *http.Client
}

// NewOpenAIModel returns a Model backed by go-openai. It also implements
// Streamer, so Run streams its answers when Options.Progress is set. It
// makes one attempt per call: Run retries transient failures.
func NewOpenAIModel(cfg OpenAIConfig) Model {
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultModelTimeout
	}
	if cfg.HTTPClient != nil {
		oc.HTTPClient = cfg.HTTPClient
	} else {
		oc.HTTPClient = &http.Client{Timeout: timeout}
	}
	return &openAIModel{client: openai.NewClientWithConfig(oc), model: cfg.Model}
}

type openAIModel struct {
	client *openai.Client
	model  string
}

// Chat sends one chat completion request. Errors are wrapped "agent: model:"
// around go-openai's: *openai.APIError for an HTTP error answer (status,
// code, message), *openai.RequestError or a net error otherwise, or the
// context's error. The API key never appears in them.
func (m *openAIModel) Chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	if req.Model == "" {
		req.Model = m.model
	}
	resp, err := m.client.CreateChatCompletion(ctx, req)
	if err != nil {
		return resp, fmt.Errorf("agent: model: %w", err)
	}
	return resp, nil
}
