package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/router"
	"github.com/hermes-gw/hermes/skills"
)

// An async skill: the backend accepts (202), the user is told, and the
// result the backend posts later reaches the same chat exactly once — also
// when the gateway restarted in between. A replayed callback is refused.
func TestAsyncResultDeliveredOnceAcrossRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.model.SetHandler(vpnModel)
	first := h.start(gateway.Deps{})
	ctx := withTimeout(t, 60*time.Second)

	u, body := h.callbackRequest(textXML("zhangsan", "我下周出差，帮我申请 7 天 VPN", "vpn-1"), time.Now())
	post(t, u, body)
	if _, err := h.wecomAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := len(h.backend.Pending()); n != 1 {
		t.Fatalf("backend holds %d pending tasks, want 1", n)
	}
	// A result for another task, correctly signed for this call's URL, is
	// refused: the 202 named the task this URL reports.
	url := h.callbackURL()
	other := skills.AsyncCallback{TaskID: "VPN-9999", Status: skills.AsyncSucceeded, Message: "别的任务"}
	if status := postCallback(t, ctx, url, other, []byte(testHMACKey)); status != http.StatusBadRequest {
		t.Fatalf("callback for another task answered %d, want 400", status)
	}
	// The workers stop (a deploy); the HTTP side keeps taking callbacks.
	if err := first.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.backend.CompleteAsync(ctx); err != nil {
		t.Fatalf("backend posting the result: %v", err)
	}
	if n := h.count(`SELECT count(*) FROM async_tasks WHERE status = 'done'`); n != 1 {
		t.Fatalf("done tasks = %d, want 1", n)
	}
	h.start(gateway.Deps{}) // the new release delivers what was stored
	msgs, err := h.wecomAPI.WaitMessages(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	h.waitIdle(ctx)
	msgs = h.wecomAPI.Messages()
	if len(msgs) != 2 || msgs[1].ToUser != "zhangsan" || !strings.Contains(msgs[1].Content, "已处理完成") || !strings.Contains(msgs[1].Content, "VPN-") {
		t.Fatalf("messages %+v, want the acceptance then the async result to zhangsan", msgs)
	}
	// The same callback again (a backend retry, or a replay) changes nothing.
	replay := skills.AsyncCallback{TaskID: "x", Status: skills.AsyncSucceeded, Message: "再来一次"}
	if status := postCallback(t, ctx, url, replay, []byte(testHMACKey)); status != http.StatusGone {
		t.Fatalf("replayed callback answered %d, want 410", status)
	}
	// A forged token is refused before any lookup.
	forged := strings.TrimSuffix(url, url[len(url)-4:]) + "AAAA"
	if status := postCallback(t, ctx, forged, replay, []byte(testHMACKey)); status != http.StatusUnauthorized {
		t.Fatalf("forged callback answered %d, want 401", status)
	}
	h.waitIdle(ctx)
	if n := len(h.wecomAPI.Messages()); n != 2 {
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
	h := newHarness(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h.model.SetHandler(vpnModel)
	features := newFeatures()
	h.start(gateway.Deps{Now: clock, Features: features})
	rt := featureOf[*router.Router](t, features)
	ctx := withTimeout(t, 60*time.Second)

	u, body := h.callbackRequest(textXML("lisi", "帮我申请 7 天 VPN", "vpn-2"), clock())
	post(t, u, body)
	if _, err := h.wecomAPI.WaitMessages(ctx, 1); err != nil {
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
	msgs, err := h.wecomAPI.WaitMessages(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[1].ToUser != "lisi" || !strings.Contains(msgs[1].Content, "超时") || !strings.Contains(msgs[1].Content, "VPN-") {
		t.Fatalf("timeout message %+v", msgs[1])
	}
	// The backend answering afterwards is too late.
	if err := h.backend.CompleteAsync(ctx); err == nil {
		t.Fatal("a callback after the timeout was accepted")
	}
}

func TestRouteAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(gateway.Deps{})
	call := func(auth, body string) (int, skills.RouteResponse) {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/v1/route", strings.NewReader(body))
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
	if calls := h.backend.Calls(); len(calls) == 0 || calls[0].Identity.UserID != "zhangsan" || calls[0].Identity.Channel != "router" {
		t.Fatalf("backend calls %+v", calls)
	}
}

func TestSkillsReloadKeepsOldSetWhenBroken(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	skill := func(name string) string {
		return "---\nname: " + name + "\ndescription: test skill\nendpoint: /hr/leave-balance\nidentity: none\n---\n"
	}
	write("one", skill("skill_one"))
	gw := h.start(gateway.Deps{SkillsFS: os.DirFS(dir)})
	names := func() string {
		resp, err := http.Get(h.srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	write("two", "---\nname: skill_two\ntimout: 5s\n---\n") // a typo
	if err := gw.ReloadSkills(); err == nil || !strings.Contains(err.Error(), "timout") {
		t.Fatalf("reload of a broken set: %v, want an error naming the field", err)
	}
	if page := names(); !strings.Contains(page, "skill_one") || strings.Contains(page, "skill_two") {
		t.Fatal("a refused reload changed the skills")
	}
	write("two", skill("skill_two"))
	if err := gw.ReloadSkills(); err != nil {
		t.Fatal(err)
	}
	if page := names(); !strings.Contains(page, "skill_one") || !strings.Contains(page, "skill_two") {
		t.Fatal("the fixed set was not loaded")
	}
}

// The model cannot choose whose data a skill returns: a scripted model puts
// another employee's id in the arguments; the backend still sees the
// verified sender (signed headers) and refuses, and lisi's pay never
// reaches zhangsan.
func TestModelCannotSpoofTheCaller(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleTool {
			return openaitest.Reply{Content: "抱歉，只能查询你本人的工资条。"}
		}
		return openaitest.Reply{ToolCalls: []openai.ToolCall{
			openaitest.ToolCall("hr_payslip_summary", `{"employee_id":"lisi","month":"2026-10"}`)}}
	})
	h.start(gateway.Deps{})
	ctx := withTimeout(t, 30*time.Second)
	u, body := h.callbackRequest(textXML("zhangsan", "帮我查一下 lisi 上个月的工资", "spoof-1"), time.Now())
	post(t, u, body)
	msgs, err := h.wecomAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	calls := h.backend.Calls()
	if len(calls) != 1 || calls[0].Identity.UserID != "zhangsan" || calls[0].Status != http.StatusForbidden {
		t.Fatalf("backend calls %+v, want one as zhangsan, refused", calls)
	}
	reqs := h.model.Requests()
	toolMsg := reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1]
	for _, leaked := range []string{"李四", "实发", "22000"} {
		if strings.Contains(msgs[0].Content, leaked) || strings.Contains(toolMsg.Content, leaked) {
			t.Fatalf("lisi's pay leaked: reply %q, observation %q", msgs[0].Content, toolMsg.Content)
		}
	}
}

// A skill limited to a department is offered to its members only: WeCom's
// callback carries no departments, so the worker looks them up (user/get).
func TestDepartmentAccessOnWeCom(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "finance"), 0o755)
	os.WriteFile(filepath.Join(dir, "finance", "SKILL.md"), []byte(
		"---\nname: finance_report\ndescription: 财务报表\nendpoint: /hr/leave-balance\nidentity: none\naccess:\n  corps: [\""+testCorpID+"\"]\n  departments: [\"7\"]\n---\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "leave"), 0o755)
	os.WriteFile(filepath.Join(dir, "leave", "SKILL.md"), []byte(
		"---\nname: leave_balance\ndescription: 年假余额\nendpoint: /hr/leave-balance\nidentity: none\n---\n"), 0o644)
	h.wecomAPI.SetDepartments("zhangsan", 7)
	h.wecomAPI.SetDepartments("lisi", 3)
	h.model.Script(openaitest.Reply{Content: "好的"})
	h.start(gateway.Deps{SkillsFS: os.DirFS(dir)})
	ctx := withTimeout(t, 30*time.Second)

	offered := func(user, msgID string, n int) []string {
		u, body := h.callbackRequest(textXML(user, "帮我看看报表", msgID), time.Now())
		post(t, u, body)
		if _, err := h.wecomAPI.WaitMessages(ctx, n); err != nil {
			t.Fatal(err)
		}
		reqs := h.model.Requests()
		var names []string
		for _, tool := range reqs[len(reqs)-1].Tools {
			names = append(names, tool.Function.Name)
		}
		return names
	}
	if got := offered("zhangsan", "d-1", 1); !slices.Contains(got, "finance_report") {
		t.Fatalf("zhangsan (department 7) was offered %v, want finance_report", got)
	}
	if got := offered("lisi", "d-2", 2); slices.Contains(got, "finance_report") || !slices.Contains(got, "leave_balance") {
		t.Fatalf("lisi (department 3) was offered %v", got)
	}
	// Each run keeps the asker's departments, for the console's cost by
	// department.
	h.waitIdle(ctx)
	if n := h.count(`SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id
	                 WHERE (s.user_id = 'zhangsan' AND r.departments = '{7}') OR (s.user_id = 'lisi' AND r.departments = '{3}')`); n != 2 {
		t.Errorf("%d runs with their asker's departments, want 2", n)
	}
}

// A skill whose backend fails opens its circuit breaker, and the opening
// is stored for the console's skills chart (skill_breaker_events), through
// the recorder the gateway gives its registry.
func TestBreakerOpeningIsStored(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(down.Close)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "status"), 0o755); err != nil {
		t.Fatal(err)
	}
	skill := "---\nname: it_status\ndescription: 查询系统状态\nendpoint: " + down.URL + "/status\nidentity: none\n" +
		"retry:\n  max_attempts: 1\ncircuit_breaker:\n  failures: 1\n  open_for: 5m\n---\n"
	if err := os.WriteFile(filepath.Join(dir, "status", "SKILL.md"), []byte(skill), 0o644); err != nil {
		t.Fatal(err)
	}
	h.model.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_status", `{}`)}},
		openaitest.Reply{Content: "系统暂时查不到"},
	)
	h.start(gateway.Deps{SkillsFS: os.DirFS(dir)})
	ctx := withTimeout(t, 30*time.Second)
	u, body := h.callbackRequest(textXML("zhangsan", "系统状态怎么样？", "breaker-1"), time.Now())
	if status, _ := post(t, u, body); status != http.StatusOK {
		t.Fatalf("callback: %d", status)
	}
	if _, err := h.wecomAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The event is written beside the call, off its path: wait for it.
	const opened = `SELECT count(*) FROM skill_breaker_events WHERE skill = 'it_status' AND from_state = 'closed' AND to_state = 'open'`
	for h.count(opened) != 1 {
		select {
		case <-ctx.Done():
			t.Fatalf("no breaker opening stored; events: %d", h.count(`SELECT count(*) FROM skill_breaker_events`))
		case <-time.After(10 * time.Millisecond):
		}
	}
}
