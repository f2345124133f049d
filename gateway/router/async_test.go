package router_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/router"
	"github.com/hermes-gw/hermes/skills"
)

// An async skill: the backend accepts (202), the user is told, and the
// result the backend posts later reaches the same chat exactly once — also
// when the gateway restarted in between. A replayed callback is refused.
func TestAsyncResultDeliveredOnceAcrossRestart(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.SetHandler(vpnModel)
	first := h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)

	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "我下周出差，帮我申请 7 天 VPN", "vpn-1"), time.Now())
	gatewaytest.Post(t, u, body)
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := len(h.Backend.Pending()); n != 1 {
		t.Fatalf("backend holds %d pending tasks, want 1", n)
	}
	// A result for another task, correctly signed for this call's URL, is
	// refused: the 202 named the task this URL reports.
	url := callbackURL(h)
	other := skills.AsyncCallback{TaskID: "VPN-9999", Status: skills.AsyncSucceeded, Message: "别的任务"}
	if status := postCallback(t, ctx, url, other, []byte(gatewaytest.HMACKey)); status != http.StatusBadRequest {
		t.Fatalf("callback for another task answered %d, want 400", status)
	}
	// The workers stop (a deploy); the HTTP side keeps taking callbacks.
	if err := first.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Backend.CompleteAsync(ctx); err != nil {
		t.Fatalf("backend posting the result: %v", err)
	}
	if n := h.Count(`SELECT count(*) FROM async_tasks WHERE status = 'done'`); n != 1 {
		t.Fatalf("done tasks = %d, want 1", n)
	}
	h.Start(gateway.Deps{}) // the new release delivers what was stored
	msgs, err := h.WeComAPI.WaitMessages(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	msgs = h.WeComAPI.Messages()
	if len(msgs) != 2 || msgs[1].ToUser != "zhangsan" || !strings.Contains(msgs[1].Content, "已处理完成") || !strings.Contains(msgs[1].Content, "VPN-") {
		t.Fatalf("messages %+v, want the acceptance then the async result to zhangsan", msgs)
	}
	// The same callback again (a backend retry, or a replay) changes nothing.
	replay := skills.AsyncCallback{TaskID: "x", Status: skills.AsyncSucceeded, Message: "再来一次"}
	if status := postCallback(t, ctx, url, replay, []byte(gatewaytest.HMACKey)); status != http.StatusGone {
		t.Fatalf("replayed callback answered %d, want 410", status)
	}
	// A forged token is refused before any lookup.
	forged := strings.TrimSuffix(url, url[len(url)-4:]) + "AAAA"
	if status := postCallback(t, ctx, forged, replay, []byte(gatewaytest.HMACKey)); status != http.StatusUnauthorized {
		t.Fatalf("forged callback answered %d, want 401", status)
	}
	h.WaitIdle(ctx)
	if n := len(h.WeComAPI.Messages()); n != 2 {
		t.Fatalf("messages = %d after replays, want 2", n)
	}
}

// vpnModel asks for VPN access, then tells the user it started.
func vpnModel(req openai.ChatCompletionRequest) openaitest.Reply {
	if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleTool {
		return openaitest.Reply{Content: "VPN 申请已提交，审批结果稍后发给你。"}
	}
	return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_vpn_access", `{"reason":"出差","days":7}`)}}
}

func TestAsyncTaskWithoutAnswerTimesOut(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h.Model.SetHandler(vpnModel)
	features := gatewaytest.NewFeatures()
	h.Start(gateway.Deps{Now: clock, Features: features})
	rt := gatewaytest.FeatureOf[*router.Router](t, features)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)

	u, body := h.CallbackRequest(gatewaytest.TextXML("lisi", "帮我申请 7 天 VPN", "vpn-2"), clock())
	gatewaytest.Post(t, u, body)
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n, err := rt.ExpireAsyncTasks(ctx); err != nil || n != 0 {
		t.Fatalf("expired %d (%v) before the deadline", n, err)
	}
	mu.Lock()
	now = now.Add(31 * time.Minute) // default skills.async_timeout is 30m
	mu.Unlock()
	if n, err := rt.ExpireAsyncTasks(ctx); err != nil || n != 1 {
		t.Fatalf("expired %d (%v), want 1", n, err)
	}
	msgs, err := h.WeComAPI.WaitMessages(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[1].ToUser != "lisi" || !strings.Contains(msgs[1].Content, "超时") || !strings.Contains(msgs[1].Content, "VPN-") {
		t.Fatalf("timeout message %+v", msgs[1])
	}
	// The backend answering afterwards is too late.
	if err := h.Backend.CompleteAsync(ctx); err == nil {
		t.Fatal("a callback after the timeout was accepted")
	}
}

func TestRouteAPI(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{})
	call := func(auth, body string) (int, skills.RouteResponse) {
		req, _ := http.NewRequest(http.MethodPost, h.Srv.URL+"/v1/route", strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out skills.RouteResponse
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	body := `{"request_id":"req-1","tool_calls":[
	  {"tool_call_id":"call_a","name":"hr_leave_balance","arguments":"{}"},
	  {"tool_call_id":"call_b","name":"it_ticket_status","arguments":{"ticket_id":"INC-0000"}},
	  {"tool_call_id":"call_c","name":"no_such_skill","arguments":{}}]}`
	if status, _ := call("", body); status != 401 {
		t.Fatalf("no key: %d, want 401", status)
	}
	if status, _ := call("wrong-key-0123456789", body); status != 401 {
		t.Fatalf("wrong key: %d, want 401", status)
	}
	status, resp := call("test-router-key-0123456789", body)
	if status != 200 || resp.RequestID != "req-1" || resp.Status != skills.RoutePartialSuccess || len(resp.Results) != 3 {
		t.Fatalf("route: %d %+v", status, resp)
	}
	for i, id := range []string{"call_a", "call_b", "call_c"} {
		if resp.Results[i].ToolCallID != id {
			t.Fatalf("result %d has id %q, want %q", i, resp.Results[i].ToolCallID, id)
		}
	}
	if resp.Results[0].Error != "" || !strings.Contains(resp.Results[0].Content, "剩余") || resp.Results[1].Error == "" || resp.Results[2].Error == "" {
		t.Fatalf("results %+v", resp.Results)
	}
	// The backend saw the key's identity, never one from the request.
	if calls := h.Backend.Calls(); len(calls) == 0 || calls[0].Identity.UserID != "zhangsan" || calls[0].Identity.Channel != "router" {
		t.Fatalf("backend calls %+v", calls)
	}
}
