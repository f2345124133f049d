package openaiapi_test

import (
	"encoding/json"
	"net/http"
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
	"github.com/hermes-gw/hermes/skills"
)

// financeGroup is a WeCom group chat groupSkill is limited to.
const (
	financeGroup = "wrFinanceGroup0001"
	groupSkill   = "hr_team_leave"
)

// groupSkills writes two signed skills of the demo backend:
// hr_team_leave, limited with access.chats to financeGroup, and
// hr_leave_balance, for anyone.
func groupSkills(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, s := range []struct{ name, endpoint, access string }{
		{groupSkill, "/hr/team-leave", "access:\n  corps: [\"" + gatewaytest.CorpID + "\"]\n  chats: [\"" + financeGroup + "\"]\n"},
		{gatewaytest.LeaveTool, "/hr/leave-balance", ""},
	} {
		os.MkdirAll(filepath.Join(dir, s.name), 0o755)
		skill := "---\nname: " + s.name + "\ndescription: 团队休假\nendpoint: " + s.endpoint + "\nread_only: true\n" +
			"triggers:\n  always: true\nidentity:\n  hmac_key_env: " + skills.SampleHRKeyEnv + "\n" + s.access + "---\n"
		if err := os.WriteFile(filepath.Join(dir, s.name, "SKILL.md"), []byte(skill), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestAPIClientCannotBorrowAGroupChat: an API client that names its
// session after a group's chat id (in "user", in X-Session-Id) is still in
// a session of its own key: a skill limited to that group is neither
// offered nor callable, and no backend ever receives the group's chat id
// signed. The same holds for /v1/route, whose body cannot name a chat.
func TestAPIClientCannotBorrowAGroupChat(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.StartExtra(gatewaytest.OpenAIYAML, gateway.Deps{SkillsFS: os.DirFS(groupSkills(t))})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	for _, tc := range []struct {
		name         string
		user, header string
	}{
		{"User", financeGroup, ""},
		{"SessionHeader", "someone", financeGroup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.Model.Requests())
			// The model tries the group's skill, then the open one, then answers.
			h.Model.Script(
				openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall(groupSkill, `{}`)}},
				openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall(gatewaytest.LeaveTool, `{}`)}},
				openaitest.Reply{Content: "好的"},
			)
			calls := len(h.Backend.Calls())
			body, _ := json.Marshal(openai.ChatCompletionRequest{Model: "hermes", User: tc.user,
				Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "看一下财务报表"}}})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.Srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
			req.Header.Set("Authorization", "Bearer "+gatewaytest.APIKeyLisi)
			if tc.header != "" {
				req.Header.Set("X-Session-Id", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}

			first := h.Model.Requests()[before]
			var offered []string
			for _, tool := range first.Tools {
				offered = append(offered, tool.Function.Name)
			}
			if slices.Contains(offered, groupSkill) || !slices.Contains(offered, gatewaytest.LeaveTool) {
				t.Errorf("offered %v: want hr_leave_balance and never hr_team_leave", offered)
			}
			got := h.Backend.Calls()[calls:]
			for _, c := range got {
				if c.Identity.ChatID == financeGroup {
					t.Fatalf("the backend received the group's chat id, signed: %+v", c.Identity)
				}
			}
			want := "api:open-webui:lisi:" + financeGroup
			if len(got) != 1 || got[0].Identity.ChatID != want || got[0].Identity.Channel != "api" {
				t.Errorf("backend calls %+v, want one (hr_leave_balance) in chat %s", got, want)
			}
		})
	}

	// Another key naming the same session gets a chat (and history) of its own.
	h.Model.Script(openaitest.Reply{Content: "好的"})
	if _, err := apiClient(h, gatewaytest.APIKeyOnly).CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "hermes-lite",
		User: financeGroup, Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "你好"}}}); err != nil {
		t.Fatal(err)
	}
	if n := h.Count(`SELECT count(*) FROM sessions WHERE chat_id = $1`, financeGroup); n != 0 {
		t.Errorf("%d sessions have the group's chat id", n)
	}
	if n := h.Count(`SELECT count(DISTINCT chat_id) FROM sessions WHERE channel = 'api' AND chat_id LIKE '%' || $1`, financeGroup); n != 2 {
		t.Errorf("lisi and wangwu naming the same session: %d chats, want 2", n)
	}

	t.Run("Route", func(t *testing.T) {
		calls := len(h.Backend.Calls())
		body := `{"request_id":"r1","chat_id":"` + financeGroup + `","user":"` + financeGroup +
			`","tool_calls":[{"tool_call_id":"c1","name":"` + groupSkill + `","arguments":{}}]}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.Srv.URL+"/v1/route", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer test-router-key-0123456789")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out skills.RouteResponse
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if len(out.Results) != 1 || !strings.Contains(out.Results[0].Error, "not available") {
			t.Errorf("route results %+v, want hr_team_leave refused", out.Results)
		}
		if n := len(h.Backend.Calls()) - calls; n != 0 {
			t.Errorf("the route ran %d backend calls", n)
		}
	})
}
