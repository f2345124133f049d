package openaiapi

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ratelimit"
)

// The OpenAI-compatible API lets existing clients (Open WebUI, Cherry
// Studio, LobeChat, the openai SDKs) talk to the company's agent: each API
// key is an identity, as in /v1/route, and its turns run the same agent
// with the skills that identity may use. Turns run inline in the request
// (not through the inbox): the client waits on its connection anyway, and
// a turn lost with a dropped connection is retried by the client as with
// any OpenAI endpoint. The finished turn is recorded in Postgres like a
// chat message's (inbound row, run, trace, history) so `hermes runs` and
// the console show it; no connection is held while the model runs.

// API is the OpenAI-compatible API of one gateway. Make one per gateway
// with New.
type API struct {
	s      gateway.Services
	limits limits // per API key, this replica
}

var _ gateway.RouteFeature = (*API)(nil)

// New is an API to attach to a gateway.
func New() *API { return &API{} }

// Attach implements gateway.Feature.
func (a *API) Attach(s gateway.Services) error {
	a.s = s
	return nil
}

// Routes implements gateway.RouteFeature: both are public, for the
// clients (behind the company network, usually).
func (a *API) Routes(public, _ gin.IRouter) {
	public.POST("/v1/chat/completions", a.chatCompletions)
	public.GET("/v1/models", a.listModels)
}

// apiChannel is the channel name of the API's sessions, runs and messages.
const apiChannel = "api"

// sessionHeader selects the Hermes session of a request, over its "user".
const sessionHeader = "X-Session-Id"

// maxSessionIDLen bounds a session id from a header or "user".
const maxSessionIDLen = 128

// OpenAI error types and codes of the error body.
const (
	errTypeInvalid = "invalid_request_error"
	errTypeServer  = "server_error"
	codeBadKey     = "invalid_api_key"
	codeNoModel    = "model_not_found"
)

// apiError is an OpenAI error answer: {"error":{"message","type","param","code"}}.
type apiError struct {
	status     int
	retryAfter time.Duration // > 0: sent as Retry-After (a 429)
	Message    string        `json:"message"`
	Type       string        `json:"type"`
	Param      *string       `json:"param"`
	Code       *string       `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func newAPIError(status int, typ, code, param, format string, args ...any) *apiError {
	e := &apiError{status: status, Message: fmt.Sprintf(format, args...), Type: typ}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	return e
}

func badRequest(param, format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, errTypeInvalid, "", param, format, args...)
}

// writeAPIError answers err in the OpenAI shape and logs it once.
func (a *API) writeAPIError(c *gin.Context, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = newAPIError(http.StatusInternalServerError, errTypeServer, "", "", "internal error")
		a.s.Log.Error("openai api: request failed", "err", err)
	} else {
		a.s.Log.Warn("openai api: request refused", "path", c.Request.URL.Path, "status", e.status, "err", e.Message)
	}
	if e.retryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(e.retryAfter)))
	}
	setWriteDeadline(c.Writer, a.s.Config.OpenAIAPI.WriteTimeout)
	c.AbortWithStatusJSON(e.status, gin.H{"error": e})
}

// setWriteDeadline bounds the next writes to a client to d from now: a
// client that stops reading holds a handler no longer than that. Without
// support for deadlines (a test's recorder) writes go unbounded.
func setWriteDeadline(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
}

// openAIKey finds the key of an Authorization header, comparing every
// configured key in constant time.
func (a *API) openAIKey(header string) (config.OpenAIKey, error) {
	found, ok := config.BearerKey(header, a.s.Config.OpenAIAPI.Keys, func(k config.OpenAIKey) string { return k.Key })
	if !ok {
		return config.OpenAIKey{}, newAPIError(http.StatusUnauthorized, errTypeInvalid, codeBadKey, "",
			"Incorrect API key provided. Use Authorization: Bearer <key> with a key from openai_api.keys.")
	}
	return found, nil
}

// modelsOf are the model ids key may use.
func (a *API) modelsOf(key config.OpenAIKey) []string {
	if len(key.Models) > 0 {
		return key.Models
	}
	return a.s.Config.OpenAIAPI.Models
}

// authorize checks that the API is on and the request's key is known.
func (a *API) authorize(c *gin.Context) (config.OpenAIKey, error) {
	if len(a.s.Config.OpenAIAPI.Keys) == 0 {
		return config.OpenAIKey{}, newAPIError(http.StatusNotFound, errTypeInvalid, "", "", "the OpenAI-compatible API is off (no openai_api.keys)")
	}
	return a.openAIKey(c.GetHeader("Authorization"))
}

// listModels is GET /v1/models: the model ids the key may use.
func (a *API) listModels(c *gin.Context) {
	key, err := a.authorize(c)
	if err != nil {
		a.writeAPIError(c, err)
		return
	}
	list := openai.ModelsList{}
	for _, id := range a.modelsOf(key) {
		list.Models = append(list.Models, openai.Model{ID: id, Object: "model", OwnedBy: "hermes"})
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": list.Models})
}

// chatRequest is a checked /v1/chat/completions request.
type chatRequest struct {
	openai.ChatCompletionRequest
	userText string          // the last message: the turn
	history  []agent.Message // earlier user/assistant messages the client sent
	session  string          // the client's name of its session: X-Session-Id, else "user"
}

// readChatRequest reads and checks the body of r for key.
func (a *API) readChatRequest(r *http.Request, key config.OpenAIKey) (chatRequest, error) {
	return decodeChatRequest(r.Body, r.Header.Get(sessionHeader), a.s.Config.OpenAIAPI, a.modelsOf(key))
}

// decodeChatRequest reads and checks a body: bounded in bytes and
// messages, for one of models, ending with a user message with text.
// sessionID is the X-Session-Id header. Every error is a 4xx *apiError.
func decodeChatRequest(body io.Reader, sessionID string, cfg config.OpenAIAPIConfig, models []string) (chatRequest, error) {
	var req chatRequest
	limit := cfg.MaxBodyBytes
	data, err := io.ReadAll(io.LimitReader(body, int64(limit)+1))
	if err != nil {
		return req, badRequest("", "body unreadable: %v", err)
	}
	if len(data) > limit {
		return req, badRequest("", "body over %d bytes (openai_api.max_body_bytes)", limit)
	}
	if err := json.Unmarshal(data, &req.ChatCompletionRequest); err != nil {
		return req, badRequest("", "body is not a chat completion request: %v", err)
	}
	if !slices.Contains(models, req.Model) {
		return req, newAPIError(http.StatusNotFound, errTypeInvalid, codeNoModel, "model",
			"The model %q does not exist or you do not have access to it; GET /v1/models lists yours.", req.Model)
	}
	msgs := req.Messages
	switch {
	case len(msgs) == 0:
		return req, badRequest("messages", "messages is empty")
	case len(msgs) > cfg.MaxMessages:
		return req, badRequest("messages", "%d messages, at most %d (openai_api.max_messages)", len(msgs), cfg.MaxMessages)
	}
	last := msgs[len(msgs)-1]
	req.userText = strings.TrimSpace(messageText(last))
	if last.Role != openai.ChatMessageRoleUser || req.userText == "" {
		return req, badRequest("messages", "the last message must be a user message with text")
	}
	// The agent keeps its own system prompt and tools: a client's system
	// messages and tool messages are not passed on.
	for _, m := range msgs[:len(msgs)-1] {
		if m.Role == openai.ChatMessageRoleUser || m.Role == openai.ChatMessageRoleAssistant {
			if text := messageText(m); text != "" {
				req.history = append(req.history, agent.Message{Role: m.Role, Content: text})
			}
		}
	}
	req.session = cmp.Or(sessionID, req.User)
	if len(req.session) > maxSessionIDLen {
		return req, badRequest("user", "session id over %d characters", maxSessionIDLen)
	}
	return req, nil
}

// messageText is a message's text: its content, or its text parts joined
// (images are not passed on).
func messageText(m openai.ChatCompletionMessage) string {
	if m.Content != "" || len(m.MultiContent) == 0 {
		return m.Content
	}
	var parts []string
	for _, p := range m.MultiContent {
		if p.Type == openai.ChatMessagePartTypeText {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}
