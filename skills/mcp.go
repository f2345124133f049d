package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaKeyCaller is the MCP request _meta key carrying the caller's
// identity, signed like the HTTP headers (see MetaCaller).
const MetaKeyCaller = "hermes/caller"

// MetaKeyTraceparent carries the W3C traceparent in _meta, for stdio
// servers that see no HTTP headers.
const MetaKeyTraceparent = "traceparent"

// MetaCaller is the value of _meta["hermes/caller"] on every tools/call
// Hermes sends. Signature covers the same fields as X-Hermes-Signature
// (SignIdentity); empty when the skill signs nothing.
type MetaCaller struct {
	UserID    string `json:"user_id"`
	UserName  string `json:"user_name,omitempty"` // not signed
	Channel   string `json:"channel,omitempty"`
	Account   string `json:"account,omitempty"`
	CorpID    string `json:"corp_id,omitempty"`
	ChatID    string `json:"chat_id,omitempty"`
	Timestamp int64  `json:"timestamp"`
	Signature string `json:"signature,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// VerifyMeta checks the signed caller in an MCP request's _meta (for MCP
// servers written in Go) and returns the identity. maxSkew <= 0 means
// DefaultMaxSkew. Errors are VerifyIdentity's.
func VerifyMeta(meta map[string]any, key []byte, now time.Time, maxSkew time.Duration) (SignedIdentity, error) {
	if len(key) == 0 {
		return SignedIdentity{}, fmt.Errorf("skills: verify meta: %w: empty key", ErrIdentityInvalid)
	}
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	raw, _ := json.Marshal(meta[MetaKeyCaller])
	var mc MetaCaller
	if err := json.Unmarshal(raw, &mc); err != nil || mc.UserID == "" || mc.Signature == "" {
		return SignedIdentity{}, fmt.Errorf("skills: verify meta: %w: need %s with user_id and signature", ErrIdentityMissing, MetaKeyCaller)
	}
	id := SignedIdentity{UserID: mc.UserID, Channel: mc.Channel, Account: mc.Account, CorpID: mc.CorpID,
		ChatID: mc.ChatID, Timestamp: mc.Timestamp}
	if err := checkSignature(id, mc.Signature, key, now, maxSkew); err != nil {
		return SignedIdentity{}, fmt.Errorf("skills: verify meta: %w", err)
	}
	return id, nil
}

// MCPClients caches one MCP client session per server, shared by every
// skill and caller using that server (the identity travels per call in
// _meta and headers, never in the session). It is safe for concurrent use.
type MCPClients struct {
	mu       sync.Mutex
	sessions map[string]*mcpEntry
}

type mcpEntry struct {
	ready chan struct{} // closed once cs/err are set
	cs    *mcp.ClientSession
	err   error
}

// NewMCPClients returns an empty session cache.
func NewMCPClients() *MCPClients { return &MCPClients{sessions: map[string]*mcpEntry{}} }

// Close closes every cached session (stdio servers are stopped). Later calls
// open new sessions.
func (m *MCPClients) Close() error {
	m.mu.Lock()
	entries := m.sessions
	m.sessions = map[string]*mcpEntry{}
	m.mu.Unlock()
	var errs []error
	for _, e := range entries {
		<-e.ready
		if e.cs != nil {
			errs = append(errs, e.cs.Close())
		}
	}
	return errors.Join(errs...)
}

// get returns the cached session for key, connecting once when there is
// none; concurrent callers wait for the one connect. fresh reports whether
// this call connected.
func (m *MCPClients) get(ctx context.Context, key string, connect func() (*mcp.ClientSession, error)) (cs *mcp.ClientSession, fresh bool, err error) {
	m.mu.Lock()
	e, ok := m.sessions[key]
	if !ok {
		e = &mcpEntry{ready: make(chan struct{})}
		m.sessions[key] = e
		m.mu.Unlock()
		e.cs, e.err = connect()
		close(e.ready)
		if e.err != nil {
			m.drop(key, e)
		}
		return e.cs, true, e.err
	}
	m.mu.Unlock()
	select {
	case <-e.ready:
		return e.cs, false, e.err
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// drop forgets a broken session so the next call reconnects.
func (m *MCPClients) drop(key string, e *mcpEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[key] == e {
		delete(m.sessions, key)
		if e.cs != nil {
			go e.cs.Close() //nolint:errcheck // already broken; closing only frees it
		}
	}
}

func (m *MCPClients) dropSession(key string, cs *mcp.ClientSession) {
	m.mu.Lock()
	e := m.sessions[key]
	m.mu.Unlock()
	if e != nil && e.cs == cs {
		m.drop(key, e)
	}
}

// mcpHeadersKey carries per-call HTTP headers to mcpTransport through the
// request context: the SDK builds each POST with the caller's context.
type mcpHeadersKey struct{}

// mcpTransport adds the skill's auth (fixed at connect) and the call's
// identity headers to every request of a streamable HTTP session.
type mcpTransport struct {
	base   http.RoundTripper
	static http.Header
}

func (t *mcpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	perCall, _ := req.Context().Value(mcpHeadersKey{}).(http.Header)
	req = req.Clone(req.Context())
	for k, v := range t.static {
		req.Header[k] = v
	}
	for k, v := range perCall {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// callMCP calls the skill's tool on its MCP server with the caller's
// identity in _meta (and, over HTTP, in headers too).
func (r *Registry) callMCP(ctx context.Context, inv *invocation) (Result, error) {
	s, creds := inv.skill, inv.creds
	now := r.opts.Now()
	headers := http.Header{}
	if err := setIdentityHeaders(headers, inv.caller, now, creds.hmacKey); err != nil {
		return Result{}, fmt.Errorf("skill %s: %w", s.Name, err)
	}
	tp := traceparent(inv.caller)
	headers.Set(HeaderTraceparent, tp)
	creds.apply(headers)
	fields, _, err := mapArgs(s, inv.args)
	if err != nil {
		return Result{}, fmt.Errorf("skill %s: %w: %v", s.Name, ErrInvalidArguments, err)
	}
	params := &mcp.CallToolParams{Name: s.MCP.Tool, Arguments: fields, Meta: mcp.Meta{
		MetaKeyCaller:      metaCaller(inv.caller, headers),
		MetaKeyTraceparent: tp,
	}}

	key, connect := r.mcpServer(s, creds)
	callCtx, cancel := context.WithTimeout(context.WithValue(ctx, mcpHeadersKey{}, headers), s.Timeout)
	defer cancel()
	began := r.opts.Now()
	for {
		cs, fresh, err := r.opts.MCP.get(callCtx, key, func() (*mcp.ClientSession, error) {
			// Connect outside the caller's cancellation: the session
			// outlives this call and serves everyone.
			cctx, ccancel := context.WithTimeout(context.Background(), s.Timeout)
			defer ccancel()
			return connect(cctx)
		})
		if err != nil {
			return Result{}, mcpError(ctx, callCtx, s, fmt.Errorf("connect: %w", err), creds)
		}
		res, err := cs.CallTool(callCtx, params)
		var wire *jsonrpc.Error
		switch {
		case err == nil:
			return r.mcpResult(s, res, creds, r.opts.Now().Sub(began))
		case errors.As(err, &wire):
			// The server answered: unknown tool, bad arguments...
			return Result{}, fmt.Errorf("skill %s %w: %s", s.Name, ErrRefused, shortBody(redact(wire.Message, creds.secrets()...), 0))
		}
		if callCtx.Err() != nil {
			// Our deadline, not a broken session: keep it for the next call.
			return Result{}, mcpError(ctx, callCtx, s, err, creds)
		}
		r.opts.MCP.dropSession(key, cs)
		if fresh {
			return Result{}, mcpError(ctx, callCtx, s, err, creds)
		}
		// A cached session may have died with its server: one reconnect.
	}
}

func metaCaller(c Caller, h http.Header) MetaCaller {
	mc := MetaCaller{UserID: c.UserID, UserName: c.Name, Channel: c.Channel, Account: c.Account, CorpID: c.CorpID,
		ChatID: c.ChatID, Signature: h.Get(HeaderSignature), RequestID: c.TraceID}
	fmt.Sscan(h.Get(HeaderTimestamp), &mc.Timestamp) //nolint:errcheck // we wrote it just now
	return mc
}

// mcpServer returns the session cache key and how to connect.
func (r *Registry) mcpServer(s *Skill, creds credentials) (string, func(context.Context) (*mcp.ClientSession, error)) {
	client := func() *mcp.Client { return mcp.NewClient(&mcp.Implementation{Name: "hermes", Version: "1"}, nil) }
	if s.MCP.Command != "" {
		key := "stdio " + s.MCP.Command + "\x00" + strings.Join(s.MCP.Args, "\x00")
		return key, func(ctx context.Context) (*mcp.ClientSession, error) {
			cmd := exec.Command(s.MCP.Command, s.MCP.Args...)
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"} // nothing of Hermes's own environment
			return client().Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		}
	}
	endpoint := s.Endpoint
	if isPath(endpoint) {
		endpoint = strings.TrimSuffix(r.opts.BaseURL, "/") + endpoint
	}
	return "http " + endpoint, func(ctx context.Context) (*mcp.ClientSession, error) {
		base := r.opts.HTTPClient.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		static := http.Header{}
		creds.apply(static)
		hc := &http.Client{Transport: &mcpTransport{base: base, static: static}, CheckRedirect: r.opts.HTTPClient.CheckRedirect}
		return client().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc,
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	}
}

// mcpResult turns a tool result into a Result: structured content as JSON,
// else the text parts. A tool error is a refusal the model can read.
func (r *Registry) mcpResult(s *Skill, res *mcp.CallToolResult, creds credentials, took time.Duration) (Result, error) {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		} else {
			texts = append(texts, "[non-text content omitted]")
		}
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		return Result{}, fmt.Errorf("skill %s %w: %s", s.Name, ErrRefused, shortBody(redact(text, creds.secrets()...), 0))
	}
	contentType := "text/plain; charset=utf-8"
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			text, contentType = string(b), ContentJSON
		}
	} else if json.Valid([]byte(text)) {
		contentType = ContentJSON
	}
	if len(text) > r.opts.MaxResponseBytes {
		text = truncateUTF8(text, r.opts.MaxResponseBytes) + "\n[truncated by Hermes: the response was longer]"
	}
	return Result{Status: http.StatusOK, ContentType: contentType, Body: []byte(redact(text, creds.secrets()...)), Duration: took}, nil
}

// mcpError classifies a failure without an answer from the server.
func mcpError(ctx, callCtx context.Context, s *Skill, err error, creds credentials) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("skill %s: %w: %w", s.Name, errRunEnded, context.Cause(ctx))
	case callCtx.Err() != nil:
		return fmt.Errorf("skill %s %w: no answer within %s: %w", s.Name, ErrUnavailable, s.Timeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("skill %s %w: %w: %w", s.Name, ErrUnavailable, errNetwork, redactErr(err, creds))
}
