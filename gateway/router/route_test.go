package router_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/skills"
)

// requestVPN has zhangsan ask for VPN access and returns the callback URL
// the backend was given.
func requestVPN(t *testing.T, h *gatewaytest.Harness, ctx context.Context, msgID string) string {
	t.Helper()
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "我下周出差，帮我申请 7 天 VPN", msgID), time.Now())
	gatewaytest.Post(t, u, body)
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return callbackURL(h)
}

// callbackURL is the last callback URL the backend was given.
func callbackURL(h *gatewaytest.Harness) string {
	var url string
	for _, c := range h.Backend.Calls() {
		if c.CallbackURL != "" {
			url = c.CallbackURL
		}
	}
	return url
}

// postCallback posts cb to url as the backend would, signed with key
// (unsigned when nil), and returns the status.
func postCallback(t *testing.T, ctx context.Context, url string, cb skills.AsyncCallback, key []byte) int {
	t.Helper()
	req, err := skills.NewCallbackRequest(ctx, url, cb, key, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func postRoute(t *testing.T, h *gatewaytest.Harness, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.Srv.URL+"/v1/route", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer test-router-key-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func routeBody(calls int) string {
	var parts []string
	for i := range calls {
		parts = append(parts, fmt.Sprintf(`{"tool_call_id":"c%d","name":"hr_leave_balance","arguments":{}}`, i))
	}
	return `{"request_id":"r","tool_calls":[` + strings.Join(parts, ",") + `]}`
}

// TestRouteCapsCallsAndRateLimitsPerKey: one request carries at most
// router.max_tool_calls calls; one key gets router.rate_per_minute
// requests a minute, then 429 with Retry-After until the bucket refills.
func TestRouteCapsCallsAndRateLimitsPerKey(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg := h.Config()
	cfg.Router.MaxToolCalls, cfg.Router.RatePerMinute = 2, 2
	h.StartConfig(cfg, gateway.Deps{Now: clock})

	if resp := postRoute(t, h, routeBody(3)); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("3 calls with max_tool_calls 2: %d, want 400", resp.StatusCode)
	}
	if n := len(h.Backend.Calls()); n != 0 {
		t.Fatalf("an oversized request ran %d calls", n)
	}
	// The refused request above used one of the two; one more fits.
	if resp := postRoute(t, h, routeBody(2)); resp.StatusCode != http.StatusOK {
		t.Fatalf("within the rate: %d", resp.StatusCode)
	}
	resp := postRoute(t, h, routeBody(1))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "30" {
		t.Fatalf("over the rate: %d Retry-After %q, want 429 and 30", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	mu.Lock()
	now = now.Add(30 * time.Second) // one request's worth refilled
	mu.Unlock()
	if resp := postRoute(t, h, routeBody(1)); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the refill: %d", resp.StatusCode)
	}
}

// TestRefusalsLogNoLiveToken: a refused callback to a live async URL is
// logged without its token, and /v1/route refusals under their own name.
func TestRefusalsLogNoLiveToken(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.SetHandler(vpnModel)
	var logs chantest.LogBuffer
	h.Start(gateway.Deps{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	url := requestVPN(t, h, ctx, "tok-1")
	token := url[strings.LastIndex(url, "/")+1:]
	// Unsigned, while the skill signs: refused, the token still live.
	if status := postCallback(t, ctx, url, skills.AsyncCallback{TaskID: "VPN-1001", Status: skills.AsyncSucceeded}, nil); status != http.StatusUnauthorized {
		t.Fatalf("unsigned callback: %d, want 401", status)
	}
	req, _ := http.NewRequest(http.MethodPost, h.Srv.URL+"/v1/route", strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	text := logs.String()
	if strings.Contains(text, token) {
		t.Errorf("logs hold the live token:\n%s", text)
	}
	if !strings.Contains(text, `msg="async callback refused" path=/v1/async/[REDACTED]`) || !strings.Contains(text, `msg="route refused" path=/v1/route status=401`) ||
		strings.Contains(text, "callback refused\" path=/v1/route") {
		t.Errorf("refusals not logged under their own names:\n%s", text)
	}
}

// TestAsyncResultMasked: a backend's late result reaches the chat masked
// like every other result.
func TestAsyncResultMasked(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.SetHandler(vpnModel)
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	url := requestVPN(t, h, ctx, "mask-1")
	cb := skills.AsyncCallback{TaskID: "VPN-1001", Status: skills.AsyncSucceeded, Message: "已开通，有问题联系 IT 13812345678"}
	if status := postCallback(t, ctx, url, cb, []byte(gatewaytest.HMACKey)); status != http.StatusOK {
		t.Fatalf("callback: %d", status)
	}
	msgs, err := h.WeComAPI.WaitMessages(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := msgs[1].Content; strings.Contains(got, "13812345678") || !strings.Contains(got, "138****5678") {
		t.Errorf("async result = %q, want the number masked", got)
	}
}
