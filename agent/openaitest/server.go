package openaitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// DefaultContent is the answer when nothing is scripted and no handler is
// set.
const DefaultContent = "openaitest: no reply scripted"

// created is the fixed "created" time of every response: tests stay
// deterministic.
const created = 1767225600 // 2026-01-01T00:00:00Z

// Reply is one scripted answer.
type Reply struct {
	Content   string            // assistant text; the error message when Status is set
	ToolCalls []openai.ToolCall // build with ToolCall; an empty ID becomes "call_<n>", n counting from 1 per server
	// Hook runs before answering, with the request's context (done when the
	// client gives up). It may block, e.g. on a channel the test controls,
	// but must return when ctx is done. A non-nil error answers HTTP 500.
	Hook func(ctx context.Context) error
	// Status, when set and not 200, answers with that HTTP status and an
	// OpenAI error body.
	Status int
	// Header is added to the answer, e.g. Retry-After with a 429.
	Header http.Header
	// Usage overrides the token counts, which are otherwise estimated from
	// the request and reply sizes (about 4 bytes a token).
	Usage *openai.Usage
	// Chunks are the pieces Content is streamed in when the request has
	// stream=true; they must join to Content. Empty: pieces of three runes.
	Chunks []string
	// ChunkInterval paces a stream like a model generating at a given rate
	// (50ms: 20 chunks a second); it ends early when the client goes away.
	ChunkInterval time.Duration
}

// ToolCall builds a tool call for a Reply. The server assigns the id.
func ToolCall(name, argsJSON string) openai.ToolCall {
	return openai.ToolCall{Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: argsJSON}}
}

// Server is the fake endpoint. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	key      string
	script   []Reply
	served   int // script replies served so far
	handler  func(openai.ChatCompletionRequest) Reply
	requests []openai.ChatCompletionRequest
	raw      []json.RawMessage
	received int  // chat completion requests received
	forget   bool // ForgetRequests: count them, keep none
	calls    int  // tool call ids assigned

	transcribe  func(Transcription) Reply
	transcribed []Transcription
}

// NewServer starts a server that stops when the test ends.
func NewServer(t testing.TB) *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	mux.HandleFunc("POST /chat/completions", s.chatCompletions)
	mux.HandleFunc("POST /v1/audio/transcriptions", s.transcriptions)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure a client with, including /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// SetAPIKey makes the server require "Authorization: Bearer <key>" and
// answer 401 otherwise. Empty: no check (local servers often have none).
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Script sets the replies served in order, one per request, replacing any
// earlier script. After the last one the last reply repeats, so a
// one-reply script is a model that always answers the same way.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.served = replies, 0
}

// SetHandler computes each reply from the decoded request instead of a
// script, e.g. for concurrent tests where order is not fixed. It may be
// called concurrently; nil goes back to the script.
func (s *Server) SetHandler(h func(req openai.ChatCompletionRequest) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// Requests returns the requests received so far, decoded, in order.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ForgetRequests makes the server count the requests it receives and keep
// none (Requests and RawRequests stay empty). A capacity benchmark calls
// it: thousands of kept requests are tens of megabytes of the process's
// heap that are not the gateway's, and its garbage collector would scan
// them.
func (s *Server) ForgetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget = true
}

// Received is the number of chat completion requests received.
func (s *Server) Received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received
}

// RawRequests returns the request bodies as received, for byte-level
// assertions (a stable system prompt, a stable tools block).
func (s *Server) RawRequests() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.raw)
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
			"Incorrect API key provided.")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "could not read body: "+err.Error())
		return
	}
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	if err := checkRequest(req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}

	reply := s.record(req, body)
	if reply.Hook != nil {
		if err := reply.Hook(r.Context()); err != nil {
			writeError(w, http.StatusInternalServerError, "server_error", "", err.Error())
			return
		}
	}
	for k, v := range reply.Header {
		w.Header()[k] = v
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		msg := reply.Content
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		writeError(w, reply.Status, "server_error", "", msg)
		return
	}
	resp := s.response(req, reply, len(body))
	if req.Stream {
		writeStream(r.Context(), w, req, reply, resp)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// record stores the request and picks its reply.
func (s *Server) record(req openai.ChatCompletionRequest, body []byte) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received++
	if !s.forget {
		s.requests = append(s.requests, req)
		s.raw = append(s.raw, json.RawMessage(body))
	}
	var reply Reply
	switch {
	case s.handler != nil:
		h := s.handler
		s.mu.Unlock() // the handler may take its time or call Requests
		reply = h(req)
		s.mu.Lock()
	case len(s.script) == 0:
		reply = Reply{Content: DefaultContent}
	default:
		reply = s.script[min(s.served, len(s.script)-1)]
		s.served++
	}
	reply.ToolCalls = slices.Clone(reply.ToolCalls)
	for i := range reply.ToolCalls {
		if reply.ToolCalls[i].ID == "" {
			s.calls++
			reply.ToolCalls[i].ID = fmt.Sprintf("call_%d", s.calls)
		}
	}
	return reply
}

// checkRequest enforces the rules OpenAI-compatible servers enforce, so a
// client bug shows up as the 400 it would get in production.
func checkRequest(req openai.ChatCompletionRequest) error {
	if req.Model == "" {
		return fmt.Errorf("you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return fmt.Errorf("'messages' must contain at least one message")
	}
	var pending []string // tool_call ids of the last assistant message not yet answered
	for i, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return fmt.Errorf("messages[%d]: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id %q)", i, m.ToolCallID)
			}
			pending = slices.Delete(pending, j, j+1)
			continue
		}
		if len(pending) > 0 {
			return fmt.Errorf("messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; missing %v", i, pending)
		}
		for _, c := range m.ToolCalls {
			if c.ID == "" {
				return fmt.Errorf("messages[%d]: tool call without id", i)
			}
			pending = append(pending, c.ID)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; missing %v", pending)
	}
	return nil
}

// Slow is a reply of content that takes d to arrive, like a model that
// thinks; it ends early when the client goes away.
func Slow(content string, d time.Duration) Reply {
	return Reply{Content: content, Hook: func(ctx context.Context) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	}}
}
