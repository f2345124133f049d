package skills_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-gw/hermes/skills"
)

var mcpParams = json.RawMessage(`{"type":"object","properties":{"employee_id":{"type":"string"},"q":{"type":"string"}}}`)

func TestMCP_StreamableHTTP(t *testing.T) {
	var (
		mu      sync.Mutex
		headers []http.Header
	)
	srv := whoamiServer(testKey, func() time.Time { return testNow }, func(req *mcp.CallToolRequest) {
		mu.Lock()
		defer mu.Unlock()
		headers = append(headers, req.Extra.Header.Clone())
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var connects int
	nonces := skills.NewNonceCache()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The skill's own credential must be on every request, the
		// handshake included.
		if r.Header.Get("X-Api-Key") != "tok-123" {
			http.Error(w, "no api key", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		mu.Lock()
		switch {
		case bytes.Contains(body, []byte(`"method":"initialize"`)):
			connects++
			fallthrough
		case !bytes.Contains(body, []byte(`"method":"tools/call"`)):
			// Session setup serves every caller: it carries no identity.
			if r.Header.Get(skills.HeaderUserID) != "" {
				t.Errorf("session setup request carries identity %q", r.Header.Get(skills.HeaderUserID))
			}
		default:
			// Each tools/call POST is signed over exactly that request.
			if _, err := skills.VerifyRequest(r, body, testKey, skills.VerifyOptions{Audience: "hr_whoami", Now: testNow,
				Nonces: nonces}); err != nil {
				t.Errorf("tools/call headers: %v", err)
			}
		}
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	s := &skills.Skill{Name: "hr_whoami", Description: "who am I", Executor: skills.ExecutorMCP, Endpoint: ts.URL + "/mcp",
		MCP: &skills.MCPConfig{Tool: "whoami"}, Parameters: mcpParams, ParameterMap: map[string]string{"q": "query"},
		Auth:     &skills.Auth{Type: skills.AuthHeader, Header: "X-Api-Key", TokenEnv: "HR_TOKEN"},
		Identity: skills.IdentityConfig{HMACKeyEnv: "HR_HMAC"}}
	reg, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{Getenv: secrets, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })

	for _, caller := range []skills.Caller{zhang, {UserID: "lisi", CorpID: "ww123", TraceID: "run-43"}} {
		res, err := reg.Call(context.Background(), caller, "hr_whoami", json.RawMessage(`{"q":"年假"}`))
		if err != nil {
			t.Fatalf("Call as %s: %v", caller.UserID, err)
		}
		var got struct {
			UserID      string         `json:"user_id"`
			Args        map[string]any `json:"args"`
			Traceparent string         `json:"traceparent"`
		}
		if err := json.Unmarshal(res.Body, &got); err != nil || res.ContentType != skills.ContentJSON {
			t.Fatalf("body %s: %v", res.Body, err)
		}
		if got.UserID != caller.UserID || got.Args["query"] != "年假" || !strings.Contains(got.Traceparent, skills.TraceID(caller.TraceID)) {
			t.Errorf("server saw %+v for caller %s", got, caller.UserID)
		}
	}
	mu.Lock()
	if connects != 1 {
		t.Errorf("%d sessions opened, want one cached session for both callers", connects)
	}
	if len(headers) != 2 || headers[0].Get(skills.HeaderUserID) != "zhangsan" || headers[1].Get(skills.HeaderUserID) != "lisi" ||
		headers[0].Get(skills.HeaderSignature) == "" || !strings.HasPrefix(headers[0].Get(skills.HeaderTraceparent), "00-") {
		t.Errorf("per-call identity headers = %v", headers)
	}
	mu.Unlock()

	t.Run("SpoofRefusedByServer", func(t *testing.T) {
		_, err := reg.Call(context.Background(), zhang, "hr_whoami", json.RawMessage(`{"employee_id":"lisi"}`))
		if !errors.Is(err, skills.ErrRefused) || !strings.Contains(err.Error(), "only your own data") {
			t.Errorf("err = %v, want the server's refusal", err)
		}
	})
	t.Run("UnknownTool", func(t *testing.T) {
		bad := *s
		bad.MCP = &skills.MCPConfig{Tool: "nope"}
		reg2, _ := skills.NewRegistry([]*skills.Skill{&bad}, skills.Options{Getenv: secrets, Now: func() time.Time { return testNow }})
		t.Cleanup(func() { reg2.Close() })
		if _, err := reg2.Call(context.Background(), zhang, "hr_whoami", nil); !errors.Is(err, skills.ErrRefused) {
			t.Errorf("err = %v, want ErrRefused", err)
		}
	})
}

// TestMCP_SessionPerCredential: two skills on one server with different
// tokens get a session each; the second never rides on the first's auth.
func TestMCP_SessionPerCredential(t *testing.T) {
	srv := whoamiServer(testKey, func() time.Time { return testNow }, nil)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var (
		mu   sync.Mutex
		keys []string // X-Api-Key of each request
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	skill := func(name, tokenEnv string) *skills.Skill {
		return &skills.Skill{Name: name, Description: "who am I", Executor: skills.ExecutorMCP, Endpoint: ts.URL + "/mcp",
			MCP: &skills.MCPConfig{Tool: "whoami"}, Parameters: mcpParams,
			Auth:     &skills.Auth{Type: skills.AuthHeader, Header: "X-Api-Key", TokenEnv: tokenEnv},
			Identity: skills.IdentityConfig{HMACKeyEnv: "HR_HMAC"}}
	}
	getenv := env(map[string]string{"HR_TOKEN": "tok-hr", "IT_TOKEN": "tok-it", "HR_HMAC": string(testKey)})
	reg, err := skills.NewRegistry([]*skills.Skill{skill("hr_whoami", "HR_TOKEN"), skill("it_whoami", "IT_TOKEN")},
		skills.Options{Getenv: getenv, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	for _, name := range []string{"hr_whoami", "it_whoami"} {
		mu.Lock()
		keys = nil
		mu.Unlock()
		// The server verifies the audience hr_whoami; only the auth matters here.
		reg.Call(context.Background(), zhang, name, json.RawMessage(`{}`))
		mu.Lock()
		want := map[string]string{"hr_whoami": "tok-hr", "it_whoami": "tok-it"}[name]
		if len(keys) == 0 {
			t.Errorf("%s: no request reached the server", name)
		}
		for _, k := range keys {
			if k != want {
				t.Errorf("%s sent X-Api-Key %q, want its own %q", name, k, want)
			}
		}
		mu.Unlock()
	}
}

func TestMCP_Stdio(t *testing.T) {
	s := &skills.Skill{Name: "hr_whoami", Description: "who am I", Executor: skills.ExecutorMCP, Parameters: mcpParams,
		MCP:      &skills.MCPConfig{Tool: "whoami", Command: testBinary(t), Args: []string{"hermes-test-helper", "mcp-stdio", string(testKey)}},
		Identity: skills.IdentityConfig{HMACKeyEnv: "HR_HMAC"}}
	clients := skills.NewMCPClients()
	t.Cleanup(func() { clients.Close() })
	opts := skills.Options{Getenv: secrets, MCP: clients}
	if _, err := skills.NewRegistry([]*skills.Skill{s}, opts); err == nil || !strings.Contains(err.Error(), "mcp.command") {
		t.Fatalf("a stdio server outside the allow-list loaded: %v", err)
	}
	opts.CommandAllowList = []string{testBinary(t)}
	reg, err := skills.NewRegistry([]*skills.Skill{s}, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := reg.Call(context.Background(), zhang, "hr_whoami", json.RawMessage(`{"employee_id":"zhangsan"}`))
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if !strings.Contains(string(res.Body), `"user_id":"zhangsan"`) || !strings.Contains(string(res.Body), `"corp_id":"ww123"`) {
		t.Errorf("body = %s", res.Body)
	}
	_, err = reg.Call(context.Background(), zhang, "hr_whoami", json.RawMessage(`{"employee_id":"lisi"}`))
	if !errors.Is(err, skills.ErrRefused) {
		t.Errorf("spoofed employee_id: err = %v, want ErrRefused", err)
	}

	// The cached session goes away (shutdown, or a crashed server): the next
	// call opens a new one.
	if err := clients.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if _, err := reg.Call(context.Background(), zhang, "hr_whoami", nil); err != nil {
		t.Errorf("after the server went away: %v", err)
	}
}

func TestVerifyMeta(t *testing.T) {
	args := json.RawMessage(`{"q": "年假", "employee_id":"zhangsan"}`)
	canonical, _ := skills.CanonicalArguments(args)
	sr := skills.SignedRequest{Method: skills.SignedMethodMCP, Path: "whoami", BodySHA256: skills.BodySHA256(canonical),
		Nonce: "n-1", Audience: "hr_whoami", Identity: skills.SignedIdentity{UserID: "zhangsan", Channel: "wecom", Timestamp: testNow.Unix()}}
	meta := func(user string) map[string]any {
		return map[string]any{skills.MetaKeyCaller: map[string]any{"user_id": user, "channel": "wecom",
			"timestamp": testNow.Unix(), "nonce": "n-1", "signature": sr.Sign(testKey)}}
	}
	opts := skills.VerifyOptions{Audience: "hr_whoami", Now: testNow}
	// The server re-encodes the arguments: key order and spaces must not matter.
	reordered := json.RawMessage(`{"employee_id":"zhangsan","q":"年假"}`)
	if got, err := skills.VerifyMeta(meta("zhangsan"), "whoami", reordered, testKey, opts); err != nil || got.UserID != "zhangsan" {
		t.Fatalf("VerifyMeta = %+v, %v", got, err)
	}
	for name, tc := range map[string]struct {
		meta map[string]any
		tool string
		args json.RawMessage
		opts skills.VerifyOptions
	}{
		"ErrOtherUser":     {meta("lisi"), "whoami", args, opts},
		"ErrOtherTool":     {meta("zhangsan"), "reset_password", args, opts},
		"ErrOtherArgs":     {meta("zhangsan"), "whoami", json.RawMessage(`{"q":"工资","employee_id":"zhangsan"}`), opts},
		"ErrOtherAudience": {meta("zhangsan"), "whoami", args, skills.VerifyOptions{Audience: "it_reset", Now: testNow}},
	} {
		if _, err := skills.VerifyMeta(tc.meta, tc.tool, tc.args, testKey, tc.opts); !errors.Is(err, skills.ErrIdentityInvalid) {
			t.Errorf("%s: err = %v, want ErrIdentityInvalid", name, err)
		}
	}
	if _, err := skills.VerifyMeta(map[string]any{}, "whoami", args, testKey, opts); !errors.Is(err, skills.ErrIdentityMissing) {
		t.Errorf("no caller: err = %v, want ErrIdentityMissing", err)
	}
}
