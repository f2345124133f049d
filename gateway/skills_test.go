package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

func TestSkillsReloadKeepsOldSetWhenBroken(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
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
	gw := h.Start(gateway.Deps{SkillsFS: os.DirFS(dir)})
	names := func() string {
		resp, err := http.Get(h.Srv.URL + "/")
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
	h := gatewaytest.New(t)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleTool {
			return openaitest.Reply{Content: "抱歉，只能查询你本人的工资条。"}
		}
		return openaitest.Reply{ToolCalls: []openai.ToolCall{
			openaitest.ToolCall("hr_payslip_summary", `{"employee_id":"lisi","month":"2026-10"}`)}}
	})
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "帮我查一下 lisi 上个月的工资", "spoof-1"), time.Now())
	gatewaytest.Post(t, u, body)
	msgs, err := h.WeComAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	calls := h.Backend.Calls()
	if len(calls) != 1 || calls[0].Identity.UserID != "zhangsan" || calls[0].Status != http.StatusForbidden {
		t.Fatalf("backend calls %+v, want one as zhangsan, refused", calls)
	}
	reqs := h.Model.Requests()
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
	h := gatewaytest.New(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "finance"), 0o755)
	os.WriteFile(filepath.Join(dir, "finance", "SKILL.md"), []byte(
		"---\nname: finance_report\ndescription: 财务报表\nendpoint: /hr/leave-balance\nidentity: none\naccess:\n  corps: [\""+gatewaytest.CorpID+"\"]\n  departments: [\"7\"]\n---\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "leave"), 0o755)
	os.WriteFile(filepath.Join(dir, "leave", "SKILL.md"), []byte(
		"---\nname: leave_balance\ndescription: 年假余额\nendpoint: /hr/leave-balance\nidentity: none\n---\n"), 0o644)
	h.WeComAPI.SetDepartments("zhangsan", 7)
	h.WeComAPI.SetDepartments("lisi", 3)
	h.Model.Script(openaitest.Reply{Content: "好的"})
	h.Start(gateway.Deps{SkillsFS: os.DirFS(dir)})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	offered := func(user, msgID string, n int) []string {
		u, body := h.CallbackRequest(gatewaytest.TextXML(user, "帮我看看报表", msgID), time.Now())
		gatewaytest.Post(t, u, body)
		if _, err := h.WeComAPI.WaitMessages(ctx, n); err != nil {
			t.Fatal(err)
		}
		reqs := h.Model.Requests()
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
	h.WaitIdle(ctx)
	if n := h.Count(`SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id
	                 WHERE (s.user_id = 'zhangsan' AND r.departments = '{7}') OR (s.user_id = 'lisi' AND r.departments = '{3}')`); n != 2 {
		t.Errorf("%d runs with their asker's departments, want 2", n)
	}
}

// A skill whose backend fails opens its circuit breaker, and the opening
// is stored for the console's skills chart (skill_breaker_events), through
// the recorder the gateway gives its registry.
func TestBreakerOpeningIsStored(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
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
	h.Model.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_status", `{}`)}},
		openaitest.Reply{Content: "系统暂时查不到"},
	)
	h.Start(gateway.Deps{SkillsFS: os.DirFS(dir)})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "系统状态怎么样？", "breaker-1"), time.Now())
	if status, _ := gatewaytest.Post(t, u, body); status != http.StatusOK {
		t.Fatalf("callback: %d", status)
	}
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The event is written beside the call, off its path: wait for it.
	const opened = `SELECT count(*) FROM skill_breaker_events WHERE skill = 'it_status' AND from_state = 'closed' AND to_state = 'open'`
	for h.Count(opened) != 1 {
		select {
		case <-ctx.Done():
			t.Fatalf("no breaker opening stored; events: %d", h.Count(`SELECT count(*) FROM skill_breaker_events`))
		case <-time.After(10 * time.Millisecond):
		}
	}
}
