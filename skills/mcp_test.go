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
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The skill's own credential must be on every request, the
		// handshake included.
		if r.Header.Get("X-Api-Key") != "tok-123" {
			http.Error(w, "no api key", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			mu.Lock()
			connects++
			mu.Unlock()
		}
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
		reg2, _ := skills.NewRegistry([]*skills.Skill{&bad}, skills.Options{Getenv: secrets})
		t.Cleanup(func() { reg2.Close() })
		if _, err := reg2.Call(context.Background(), zhang, "hr_whoami", nil); !errors.Is(err, skills.ErrRefused) {
			t.Errorf("err = %v, want ErrRefused", err)
		}
	})
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
	id := skills.SignedIdentity{UserID: "zhangsan", Channel: "wecom", Timestamp: testNow.Unix()}
	meta := map[string]any{skills.MetaKeyCaller: map[string]any{"user_id": "zhangsan", "channel": "wecom",
		"timestamp": testNow.Unix(), "signature": skills.SignIdentity(testKey, id)}}
	if got, err := skills.VerifyMeta(meta, testKey, testNow, 0); err != nil || got.UserID != "zhangsan" {
		t.Fatalf("VerifyMeta = %+v, %v", got, err)
	}
	meta[skills.MetaKeyCaller].(map[string]any)["user_id"] = "lisi"
	if _, err := skills.VerifyMeta(meta, testKey, testNow, 0); !errors.Is(err, skills.ErrIdentityInvalid) {
		t.Errorf("edited user_id: err = %v, want ErrIdentityInvalid", err)
	}
	if _, err := skills.VerifyMeta(map[string]any{}, testKey, testNow, 0); !errors.Is(err, skills.ErrIdentityMissing) {
		t.Errorf("no caller: err = %v, want ErrIdentityMissing", err)
	}
}
