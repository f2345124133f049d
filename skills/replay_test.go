package skills_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

// TestReplay_CapturedHeadersRefused plays the tester of issue 13: a
// backend (or anyone on the path) keeps the headers Hermes sent to
// hr_leave_balance and replays them to the password reset, to the same
// endpoint with another body, and as they were. The demo backend refuses
// every replay with 401 and runs nothing.
func TestReplay_CapturedHeadersRefused(t *testing.T) {
	backend := demobackend.New(testKey, func() time.Time { return testNow })
	var (
		mu       sync.Mutex
		captured http.Header
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if captured == nil {
			captured = r.Header.Clone()
		}
		mu.Unlock()
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	defs, err := skills.LoadDir(skills.SamplesFS())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := skills.NewRegistry(defs, skills.Options{BaseURL: srv.URL, Now: func() time.Time { return testNow },
		Getenv: env(map[string]string{"HERMES_DEMO_HR_KEY": string(testKey), "HERMES_DEMO_IT_KEY": string(testKey)})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Call(context.Background(), zhang, "hr_leave_balance", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("the genuine call: %v", err)
	}

	replay := func(path, contentType, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		for k, v := range captured {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct{ name, path, contentType, body, want string }{
		// 「确认」 skipped: the reset would run on headers meant for a balance query.
		{"ToAnotherPath", "/it/password/reset", skills.ContentForm, "target_system=vpn", "签名无效"},
		{"WithAnotherBody", "/hr/leave-balance", skills.ContentJSON, `{"year":2025}`, "签名无效"},
		{"AsItWas", "/hr/leave-balance", skills.ContentJSON, `{}`, "重复的请求"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := replay(tc.path, tc.contentType, tc.body)
			if code != http.StatusUnauthorized || !strings.Contains(body, tc.want) {
				t.Errorf("replayed headers: HTTP %d %s, want 401 %q", code, body, tc.want)
			}
		})
	}
	if calls := backend.Calls(); len(calls) != 1 || calls[0].Path != "/hr/leave-balance" {
		t.Errorf("backend ran %+v, want only the genuine balance query", calls)
	}
}
