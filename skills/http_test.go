package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

var (
	testNow = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	testKey = []byte("test-hmac-key")
	zhang   = skills.Caller{UserID: "zhangsan", Name: "张三", Channel: "wecom", Account: "app-hr",
		CorpID: "ww123", ChatID: "chat-9", TraceID: "run-42"}
)

// recorder is a backend that keeps what it received and answers as told.
type recorder struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies []string
	status int
	body   string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, r)
	rec.bodies = append(rec.bodies, string(b))
	status, body := rec.status, rec.body
	rec.mu.Unlock()
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

var secrets = env(map[string]string{"HR_TOKEN": "tok-123", "HR_HMAC": string(testKey)})

// hrSkill is a skill whose schema lets the model send a user_id.
func hrSkill() *skills.Skill {
	return &skills.Skill{
		Name: "hr_leave_apply", Description: "apply for leave", Endpoint: "/hr/leave",
		Parameters: json.RawMessage(`{"type":"object","properties":{"user_id":{"type":"string"},"days":{"type":"integer"}},"required":["days"]}`),
		Auth:       &skills.Auth{Type: skills.AuthBearer, TokenEnv: "HR_TOKEN"},
		Identity:   skills.IdentityConfig{HMACKeyEnv: "HR_HMAC"},
	}
}

// bind builds a registry against backend and returns the one tool for c.
func bind(t *testing.T, backend http.Handler, s *skills.Skill, c skills.Caller, getenv func(string) string) skills.Tool {
	t.Helper()
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	reg, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{BaseURL: srv.URL + "/api", Getenv: getenv,
		Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	tools := reg.ToolsFor(c)
	if len(tools) != 1 {
		t.Fatalf("ToolsFor = %d tools, want 1", len(tools))
	}
	return tools[0]
}

func TestHTTP_IdentityInjected(t *testing.T) {
	rec := &recorder{body: `{"ok":true}`}
	tool := bind(t, rec, hrSkill(), zhang, secrets)
	// The model tries to act for lisi through the arguments.
	args := `{"user_id":"lisi","days":2}`

	res, err := tool.Call(context.Background(), json.RawMessage(args))
	out := string(res.Body)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if out != `{"ok":true}` {
		t.Errorf("out = %q", out)
	}
	if rec.count() != 1 {
		t.Fatalf("backend got %d requests", rec.count())
	}
	r, body := rec.reqs[0], rec.bodies[0]
	if r.Method != "POST" || r.URL.Path != "/api/hr/leave" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request = %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
	}
	if body != args {
		t.Errorf("body = %s, want the arguments as-is %s", body, args)
	}
	for h, want := range map[string]string{
		"Authorization":        "Bearer tok-123",
		skills.HeaderUserID:    "zhangsan",
		skills.HeaderUserName:  "%E5%BC%A0%E4%B8%89",
		skills.HeaderChannel:   "wecom",
		skills.HeaderAccount:   "app-hr",
		skills.HeaderCorpID:    "ww123",
		skills.HeaderChatID:    "chat-9",
		skills.HeaderTimestamp: strconv.FormatInt(testNow.Unix(), 10),
		skills.HeaderRequestID: "run-42",
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if skills.UserName(r) != "张三" {
		t.Errorf("UserName = %q", skills.UserName(r))
	}
	if r.Header.Get(skills.HeaderAudience) != "hr_leave_apply" || len(r.Header.Get(skills.HeaderNonce)) != 32 {
		t.Errorf("audience %q nonce %q", r.Header.Get(skills.HeaderAudience), r.Header.Get(skills.HeaderNonce))
	}
	id, err := skills.VerifyRequest(r, []byte(body), testKey, skills.VerifyOptions{Audience: "hr_leave_apply",
		Now: testNow.Add(time.Minute), Nonces: skills.NewNonceCache()})
	if err != nil {
		t.Fatalf("VerifyRequest: %v", err)
	}
	if id.UserID != "zhangsan" || id.CorpID != "ww123" || id.ChatID != "chat-9" {
		t.Errorf("verified identity = %+v, want zhangsan's", id)
	}
	for h, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, "lisi") {
				t.Errorf("header %s = %q carries the model's user_id", h, v)
			}
		}
	}
}

// TestHTTP_UnsignedOnlyByChoice: a skill without a key does not load
// (it used to send the identity unsigned, silently); identity: none sends
// it unsigned on purpose; the gateway's default key signs the others.
func TestHTTP_UnsignedOnlyByChoice(t *testing.T) {
	s := hrSkill()
	s.Identity = skills.IdentityConfig{}
	_, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{BaseURL: "http://hr.internal", Getenv: secrets})
	if err == nil || !strings.Contains(err.Error(), "identity: no key signs the caller's identity") {
		t.Fatalf("NewRegistry = %v, want the unsigned skill refused", err)
	}

	reg, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{BaseURL: "http://hr.internal", Getenv: secrets,
		DefaultHMACKeyEnv: "HR_HMAC"})
	if err != nil {
		t.Fatalf("with the gateway's default key: %v", err)
	}
	if key, err := reg.CallbackKey(s.Name); err != nil || string(key) != string(testKey) {
		t.Errorf("default key = %q, %v", key, err)
	}

	rec := &recorder{body: "ok"}
	s.Identity = skills.IdentityConfig{None: true}
	tool := bind(t, rec, s, zhang, secrets)
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"days":1}`)); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if sig := rec.reqs[0].Header.Get(skills.HeaderSignature); sig != "" {
		t.Errorf("signature %q sent with identity: none", sig)
	}
	if rec.reqs[0].Header.Get(skills.HeaderUserID) != "zhangsan" {
		t.Errorf("identity headers missing")
	}
}

func TestHTTP_ResponseErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		wantIs   error
		wantText string
	}{
		{"Refused", 403, "not yours, Bearer tok-123\n", skills.ErrRefused,
			"skill hr_leave_apply refused the request (HTTP 403: not yours, Bearer [REDACTED])"},
		{"RefusedEmptyBody", 404, "", skills.ErrRefused, "skill hr_leave_apply refused the request (HTTP 404: Not Found)"},
		{"ServerError", 502, "<html>bad gateway</html>", skills.ErrUnavailable, "skill hr_leave_apply is unavailable (HTTP 502: <html>bad gateway</html>)"},
		{"Redirect", 302, "", skills.ErrUnavailable, "(HTTP 302: Found)"},
		{"LongBody", 400, strings.Repeat("错", 500), skills.ErrRefused, "(HTTP 400: 错错"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{status: tc.status, body: tc.body}
			tool := bind(t, rec, hrSkill(), zhang, secrets)
			_, err := tool.Call(context.Background(), json.RawMessage(`{"days":1}`))
			if !errors.Is(err, tc.wantIs) {
				t.Fatalf("err = %v, want %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("err = %q, want %q", err, tc.wantText)
			}
			if strings.Contains(err.Error(), "tok-123") || len(err.Error()) > 420 {
				t.Errorf("err leaks the token or is too long: %q", err)
			}
		})
	}
}

func TestHTTP_Timeout(t *testing.T) {
	blocked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices the client hanging up only once the body is read.
		io.ReadAll(r.Body)
		<-r.Context().Done()
	})
	s := hrSkill()
	s.Timeout = 20 * time.Millisecond
	tool := bind(t, blocked, s, zhang, secrets)
	_, err := tool.Call(context.Background(), json.RawMessage(`{"days":1}`))
	if !errors.Is(err, skills.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want unavailable + deadline exceeded", err)
	}
	if !strings.Contains(err.Error(), "no answer within 20ms") {
		t.Errorf("err = %q", err)
	}
}

func TestHTTP_RedactsEchoedSecrets(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "you sent "+r.Header.Get("Authorization")+" and key "+string(testKey))
	})
	tool := bind(t, echo, hrSkill(), zhang, secrets)
	res, err := tool.Call(context.Background(), json.RawMessage(`{"days":1}`))
	out := string(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "tok-123") || strings.Contains(out, string(testKey)) {
		t.Errorf("out = %q leaks a secret", out)
	}
}

func TestHTTP_RefusesBeforeCalling(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caller skills.Caller
		env    func(string) string
		args   string
		wantIs error
		want   string
	}{
		{"NoToken", zhang, env(map[string]string{"HR_HMAC": "k"}), `{"days":1}`, skills.ErrMisconfigured,
			"skill hr_leave_apply is misconfigured: auth.token_env: environment variable HR_TOKEN is not set"},
		{"NoHMACKey", zhang, env(map[string]string{"HR_TOKEN": "t"}), `{"days":1}`, skills.ErrMisconfigured,
			"identity.hmac_key_env: environment variable HR_HMAC is not set"},
		{"NoCaller", skills.Caller{Channel: "wecom"}, secrets, `{"days":1}`, skills.ErrNoCaller, "has no caller"},
		{"ControlCharInIdentity", skills.Caller{UserID: "zhang\nsan"}, secrets, `{"days":1}`, nil, "control character"},
		{"SchemaMismatch", zhang, secrets, `{"days":"two"}`, skills.ErrInvalidArguments, "invalid arguments"},
		{"MissingRequired", zhang, secrets, `{}`, skills.ErrInvalidArguments, "days"},
		{"NotJSON", zhang, secrets, `{"days":`, skills.ErrInvalidArguments, "not valid JSON"},
		{"NotObject", zhang, secrets, `[1]`, skills.ErrInvalidArguments, "want a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			tool := bind(t, rec, hrSkill(), tc.caller, tc.env)
			_, err := tool.Call(context.Background(), json.RawMessage(tc.args))
			if err == nil || (tc.wantIs != nil && !errors.Is(err, tc.wantIs)) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %v containing %q", err, tc.wantIs, tc.want)
			}
			if rec.count() != 0 {
				t.Errorf("backend was called")
			}
		})
	}
}

func TestHTTP_GetSendsQuery(t *testing.T) {
	rec := &recorder{body: "ok"}
	s := hrSkill()
	s.Method = "GET"
	tool := bind(t, rec, s, zhang, secrets)
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"days":2,"user_id":"李四"}`)); err != nil {
		t.Fatal(err)
	}
	r := rec.reqs[0]
	if r.Method != "GET" || r.URL.Query().Get("days") != "2" || r.URL.Query().Get("user_id") != "李四" || rec.bodies[0] != "" {
		t.Errorf("request = %s %s body %q", r.Method, r.URL, rec.bodies[0])
	}
}

func TestHTTP_TruncatesResponse(t *testing.T) {
	rec := &recorder{body: strings.Repeat("假", 1000)}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	reg, err := skills.NewRegistry([]*skills.Skill{hrSkill()}, skills.Options{BaseURL: srv.URL, Getenv: secrets, MaxResponseBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	res, err := reg.ToolsFor(zhang)[0].Call(context.Background(), json.RawMessage(`{"days":1}`))
	out := string(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(out, "\n")
	if len(head) > 100 || !strings.HasPrefix(out, "假假") || !strings.Contains(out, "truncated") || strings.ContainsRune(out, '\uFFFD') {
		t.Errorf("out = %q, want at most 100 bytes of whole runes and a note", out)
	}
}
