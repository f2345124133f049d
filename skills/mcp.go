package skills

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hermes-gw/hermes/channels/guard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaKeyCaller is the MCP request _meta key carrying the caller's
// identity, signed like the HTTP headers (see MetaCaller).
const MetaKeyCaller = "hermes/caller"

// MetaKeyTraceparent carries the W3C traceparent in _meta, for stdio
// servers that see no HTTP headers.
const MetaKeyTraceparent = "traceparent"

// MCPClients caches one MCP client session per server and skill
// credential, shared by every caller of the skills using that server with
// that credential (the identity travels per call in _meta and headers,
// never in the session). It is safe for concurrent use.
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

// get returns the cached session for key, starting one connect when there
// is none. Every caller, the one that started it included, waits for it
// only until its own ctx ends: the connect runs on in the background and
// serves whoever comes next. So a server that accepts and never answers
// costs each attempt its own timeout and no more, although the SDK, when
// initialize fails, first sends notifications/cancelled to that silent
// server and can take up to 5 s more before Connect returns. fresh
// reports whether this call started the connect.
func (m *MCPClients) get(ctx context.Context, key string, connect func() (*mcp.ClientSession, error)) (cs *mcp.ClientSession, fresh bool, err error) {
	m.mu.Lock()
	e, ok := m.sessions[key]
	if !ok {
		e = &mcpEntry{ready: make(chan struct{})}
		m.sessions[key] = e
		go func() {
			// The connect reads the server's answers: a panic in it (the
			// SDK meeting a reply it does not handle) fails this session,
			// never the process.
			e.err = guard.Run(func() error {
				var err error
				e.cs, err = connect()
				return err
			})
			if e.err != nil {
				// Forgotten before its waiters wake, so a call after
				// theirs connects again.
				m.drop(key, e)
			}
			close(e.ready)
		}()
	}
	m.mu.Unlock()
	select {
	case <-e.ready:
		return e.cs, !ok, e.err
	case <-ctx.Done():
		return nil, !ok, ctx.Err()
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

// mcpCallKey carries the call being made to mcpTransport through the
// request context: the SDK builds each POST of a tools/call with the
// caller's context. Session setup (initialize and its notification) runs
// under the session's own context and so carries no caller.
type mcpCallKey struct{}

// mcpCall is what mcpTransport needs to sign a tools/call POST.
type mcpCall struct {
	inv         *invocation
	now         func() time.Time
	traceparent string
}

// mcpTransport adds the skill's auth (fixed at connect) to every request
// of a streamable HTTP session, and to the POSTs of a call the caller's
// identity, signed over that exact HTTP request.
type mcpTransport struct {
	base   http.RoundTripper
	static http.Header
}

func (t *mcpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.static {
		req.Header[k] = v
	}
	if call, ok := req.Context().Value(mcpCallKey{}).(*mcpCall); ok {
		if err := call.sign(req); err != nil {
			return nil, err
		}
	}
	return t.base.RoundTrip(req)
}

// sign reads the body (so it can be hashed) and sets the identity headers.
func (c *mcpCall) sign(req *http.Request) error {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return fmt.Errorf("read MCP request body: %w", err)
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	sr := c.inv.signRequest(c.now(), req.Method, cmp.Or(req.Host, req.URL.Host), req.URL.EscapedPath(), req.URL.RawQuery, body)
	req.Header.Set(HeaderTraceparent, c.traceparent)
	return setIdentityHeaders(req.Header, c.inv.caller, sr, c.inv.creds.hmacKey)
}

// callMCP calls the skill's tool on its MCP server with the caller's
// identity in _meta, signed over the tool and its arguments (and, over
// HTTP, in headers signed over each POST).
func (r *Registry) callMCP(ctx context.Context, inv *invocation) (Result, error) {
	s, creds := inv.skill, inv.creds
	if err := checkCaller(inv.caller); err != nil {
		return Result{}, fmt.Errorf("skill %s: %w", s.Name, err)
	}
	tp := traceparent(inv.caller)
	fields, _, err := mapArgs(s, inv.args)
	if err != nil {
		return Result{}, fmt.Errorf("skill %s: %w: %v", s.Name, ErrInvalidArguments, err)
	}
	raw, _ := json.Marshal(fields)
	canonical, err := CanonicalArguments(raw)
	if err != nil {
		return Result{}, fmt.Errorf("skill %s: %w: %v", s.Name, ErrInvalidArguments, err)
	}
	sr := inv.signRequest(r.opts.Now(), SignedMethodMCP, "", s.MCP.Tool, "", canonical)
	params := &mcp.CallToolParams{Name: s.MCP.Tool, Arguments: fields, Meta: mcp.Meta{
		MetaKeyCaller:      metaCaller(inv.caller, sr, creds.hmacKey),
		MetaKeyTraceparent: tp,
	}}

	key, connect := r.mcpServer(s, creds)
	call := &mcpCall{inv: inv, now: r.opts.Now, traceparent: tp}
	// One deadline for the whole attempt: waiting for the session (its
	// connect and initialize), a reconnect, and the call.
	callCtx, cancel := context.WithTimeout(context.WithValue(ctx, mcpCallKey{}, call), s.Timeout)
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

func metaCaller(c Caller, sr SignedRequest, key []byte) MetaCaller {
	id := sr.Identity
	mc := MetaCaller{UserID: id.UserID, UserName: c.Name, Channel: id.Channel, Account: id.Account, CorpID: id.CorpID,
		ChatID: id.ChatID, Timestamp: id.Timestamp, Nonce: sr.Nonce, Audience: sr.Audience, RequestID: c.TraceID}
	if len(key) > 0 {
		mc.Signature = sr.Sign(key)
	}
	return mc
}

// credentialKey tells sessions of different credentials apart without
// keeping the secret itself in the cache key.
func credentialKey(creds credentials) string {
	sum := sha256.Sum256([]byte(creds.authHeader + "\x00" + creds.authValue))
	return hex.EncodeToString(sum[:8])
}

// mcpServer returns the session cache key and how to connect.
func (r *Registry) mcpServer(s *Skill, creds credentials) (string, func(context.Context) (*mcp.ClientSession, error)) {
	client := func() *mcp.Client { return mcp.NewClient(&mcp.Implementation{Name: "hermes", Version: "1"}, nil) }
	if s.MCP.Command != "" {
		key := "stdio " + s.program + "\x00" + strings.Join(s.MCP.Args, "\x00")
		return key, func(ctx context.Context) (*mcp.ClientSession, error) {
			// s.program is the path checked against the allow-list.
			cmd := exec.Command(s.program, s.MCP.Args...)
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"} // nothing of Hermes's own environment
			return client().Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		}
	}
	endpoint := s.Endpoint
	if isPath(endpoint) {
		endpoint = strings.TrimSuffix(r.opts.BaseURL, "/") + endpoint
	}
	// Keyed by credential too: a second skill on the same server with
	// another token must not ride on the first skill's session.
	return "http " + endpoint + " " + credentialKey(creds), func(ctx context.Context) (*mcp.ClientSession, error) {
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
	case callCtx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		// The second: a connect an earlier attempt started (it runs on its
		// own timeout) timed out while this attempt waited for it.
		return fmt.Errorf("skill %s %w: no answer within %s: %w", s.Name, ErrUnavailable, s.Timeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("skill %s %w: %w: %w", s.Name, ErrUnavailable, errNetwork, redactErr(err, creds))
}
