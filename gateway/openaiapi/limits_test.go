package openaiapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// limitsYAML: lisi may run one request at once and start two a minute;
// wangwu has the defaults.
const limitsYAML = `
openai_api:
  requests_per_minute_per_key: 2
  keys:
    - key: ` + gatewaytest.APIKeyLisi + `
      user_id: lisi
      name: open-webui
      max_concurrent: 1
    - key: ` + gatewaytest.APIKeyOnly + `
      user_id: wangwu
      requests_per_minute: 100
`

// complete posts one non-streaming completion of text with key and
// returns the status, the Retry-After header and the decoded error.
func complete(t *testing.T, ctx context.Context, h *gatewaytest.Harness, key, text string) (int, string, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(openai.ChatCompletionRequest{Model: "hermes",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.Srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err) // not Fatal: complete runs in goroutines too
		return 0, "", nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Error map[string]any `json:"error"`
	}
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, resp.Header.Get("Retry-After"), out.Error
}

// wantRateLimited checks a 429 in OpenAI's shape with its Retry-After.
func wantRateLimited(t *testing.T, status int, retryAfter string, e map[string]any, wantRetry string) {
	t.Helper()
	if status != http.StatusTooManyRequests || retryAfter != wantRetry {
		t.Fatalf("got %d Retry-After %q, want 429 and %s", status, retryAfter, wantRetry)
	}
	param, hasParam := e["param"]
	if e["type"] != "requests" || e["code"] != "rate_limit_exceeded" || !hasParam || param != nil || e["message"] == "" {
		t.Errorf("error body %v, want OpenAI's rate_limit_exceeded", e)
	}
}

// TestOpenAIPerKeyLimits: a key over its concurrency or its requests per
// minute gets OpenAI's 429 with Retry-After at once, other keys go on, and
// the key is admitted again when a request ends or the minute refills.
func TestOpenAIPerKeyLimits(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	// The gateway's clock stands still but for offset, which the test
	// moves: on a loaded machine real seconds pass between two requests.
	var offset atomic.Int64
	start := time.Now()
	clock := func() time.Time { return start.Add(time.Duration(offset.Load())) }
	held, hold := make(chan struct{}, 1), make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		if req.Messages[len(req.Messages)-1].Content != "hold" {
			return openaitest.Reply{Content: "好的"}
		}
		return openaitest.Reply{Content: "好的", Hook: func(ctx context.Context) error {
			held <- struct{}{}
			select {
			case <-hold:
			case <-ctx.Done():
			}
			return nil
		}}
	})
	h.StartExtra(limitsYAML, gateway.Deps{Now: clock})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	t.Run("Concurrent", func(t *testing.T) {
		defer release()
		first := make(chan int, 1)
		go func() {
			status, _, _ := complete(t, ctx, h, gatewaytest.APIKeyLisi, "hold")
			first <- status
		}()
		<-held
		status, retry, e := complete(t, ctx, h, gatewaytest.APIKeyLisi, "你好")
		wantRateLimited(t, status, retry, e, "1")
		if status, _, _ := complete(t, ctx, h, gatewaytest.APIKeyOnly, "你好"); status != http.StatusOK {
			t.Errorf("another key while lisi is at her limit: %d", status)
		}
		release()
		if status := <-first; status != http.StatusOK {
			t.Errorf("the held request: %d", status)
		}
	})

	t.Run("PerMinute", func(t *testing.T) {
		// The held request used one of lisi's two (the refused one none); a
		// minute later the bucket is full again: two more, then 429 until
		// half a minute has passed.
		offset.Add(int64(time.Minute))
		for i := range 2 {
			if status, _, e := complete(t, ctx, h, gatewaytest.APIKeyLisi, "你好"); status != http.StatusOK {
				t.Fatalf("request %d within the rate: %d %v", i, status, e)
			}
		}
		status, retry, e := complete(t, ctx, h, gatewaytest.APIKeyLisi, "你好")
		wantRateLimited(t, status, retry, e, "30")
		if status, _, _ := complete(t, ctx, h, gatewaytest.APIKeyOnly, "你好"); status != http.StatusOK {
			t.Errorf("wangwu, with a limit of his own: %d", status)
		}
		offset.Add(int64(30 * time.Second))
		if status, _, e := complete(t, ctx, h, gatewaytest.APIKeyLisi, "你好"); status != http.StatusOK {
			t.Errorf("after the refill: %d %v", status, e)
		}
	})
	if n := h.Count(`SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id WHERE s.user_id = 'lisi'`); n != 4 {
		t.Errorf("lisi has %d runs, want 4: a refused request must not run", n)
	}
}

// TestOpenAILimitsConfig: the per-key limits and the write timeout have
// defaults, refuse negatives naming the key, and two keys of one identity
// (they would share sessions) are refused.
func TestOpenAILimitsConfig(t *testing.T) {
	t.Parallel()
	base := "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"
	cfg, err := config.ParseConfig([]byte(base), gatewaytest.Env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.OpenAIAPI; a.MaxConcurrentPerKey != 4 || a.RequestsPerMinutePerKey != 60 || a.WriteTimeout != 10*time.Second {
		t.Errorf("defaults: %+v", a)
	}
	key := func(extra string) string {
		return "openai_api:\n  keys:\n    - key: long-enough-key-0123456789\n      user_id: u\n" + extra
	}
	for _, tc := range []struct{ yaml, key string }{
		{"openai_api:\n  max_concurrent_per_key: -1\n", "openai_api.max_concurrent_per_key"},
		{"openai_api:\n  requests_per_minute_per_key: -1\n", "openai_api.requests_per_minute_per_key"},
		{"openai_api:\n  write_timeout: -1s\n", "openai_api.write_timeout"},
		{key("      max_concurrent: -2\n"), "openai_api.keys[0].max_concurrent"},
		{key("      requests_per_minute: -2\n"), "openai_api.keys[0].requests_per_minute"},
		{key("    - key: other-long-enough-key-0123\n      user_id: u\n"), "openai_api.keys[1]: same name and user_id"},
	} {
		_, err := config.ParseConfig([]byte(base+tc.yaml), gatewaytest.Env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: err = %v, want one naming %s", tc.yaml, err, tc.key)
		}
	}
	two := key("    - key: other-long-enough-key-0123\n      user_id: u\n      name: second\n")
	if _, err := config.ParseConfig([]byte(base+two), gatewaytest.Env(nil)); err != nil {
		t.Errorf("two keys of one user with their own names: %v", err)
	}
}
