package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/skills"
)

func lisiIn(corp, channel, account, chat string) skills.Caller {
	return skills.Caller{UserID: "lisi", CorpID: corp, Channel: channel, Account: account, ChatID: chat}
}

func TestAccess(t *testing.T) {
	rec := &recorder{body: `{"ok":true}`}
	finance := &skills.Skill{Name: "fin_ledger", Description: "general ledger", Endpoint: "/fin",
		Access: skills.Access{Corps: []string{"ww123"}, Departments: []string{"财务部"}}}
	hrOnly := &skills.Skill{Name: "hr_admin", Description: "hr admin", Endpoint: "/hr",
		Access: skills.Access{Corps: []string{"ww123"}, Channels: []string{"wecom"}, Accounts: []string{"app-hr"},
			Users: []string{"lisi"}, Chats: []string{"chat-hr"}}}
	open := &skills.Skill{Name: "hr_policy", Description: "policies", Endpoint: "/policy"}
	noCorp := &skills.Skill{Name: "hr_nocorp", Description: "x", Endpoint: "/x", Access: skills.Access{Users: []string{"lisi"}}}
	if _, err := skills.NewRegistry(unsigned(noCorp), skills.Options{BaseURL: "http://x"}); err == nil ||
		!strings.Contains(err.Error(), "access.corps: is required") {
		t.Errorf("a rule without corps loaded: %v", err)
	}
	reg, err := skills.NewRegistry(unsigned(finance, hrOnly, open), skills.Options{BaseURL: serverURL(t, rec)})
	if err != nil {
		t.Fatal(err)
	}
	names := func(c skills.Caller) string {
		var out []string
		for _, tool := range reg.ToolsFor(c) {
			out = append(out, tool.Spec().Name)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name   string
		caller skills.Caller
		want   string
	}{
		{"Everyone", zhang, "hr_policy"},
		{"Department", skills.Caller{UserID: "wangwu", CorpID: "ww123", Depts: []string{"财务部"}}, "fin_ledger,hr_policy"},
		{"UserInWrongChat", lisiIn("ww123", "wecom", "app-hr", "chat-9"), "hr_policy"},
		{"UserInChat", lisiIn("ww123", "wecom", "app-hr", "chat-hr"), "hr_admin,hr_policy"},
		// The same ids in another corp are other people and other chats.
		{"SameUserOtherCorp", lisiIn("ww-other", "wecom", "app-hr", "chat-hr"), "hr_policy"},
		{"SameDepartmentOtherCorp", skills.Caller{UserID: "wangwu", CorpID: "ww-other", Depts: []string{"财务部"}}, "hr_policy"},
		{"NoCorp", lisiIn("", "wecom", "app-hr", "chat-hr"), "hr_policy"},
		{"OtherChannel", lisiIn("ww123", "dingtalk", "app-hr", "chat-hr"), "hr_policy"},
		{"OtherAccount", lisiIn("ww123", "wecom", "app-it", "chat-hr"), "hr_policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(tc.caller); got != tc.want {
				t.Errorf("ToolsFor = %s, want %s", got, tc.want)
			}
		})
	}
	// Called anyway (a model naming a tool it was not given, or the route
	// API): refused before any request.
	for _, name := range []string{"fin_ledger", "hr_admin"} {
		_, err := reg.Call(context.Background(), zhang, name, json.RawMessage(`{}`))
		if !errors.Is(err, skills.ErrAccessDenied) {
			t.Errorf("Call %s: err = %v, want ErrAccessDenied", name, err)
		}
		_, err = reg.CallConfirmed(context.Background(), zhang, name, json.RawMessage(`{}`))
		if !errors.Is(err, skills.ErrAccessDenied) {
			t.Errorf("CallConfirmed %s: err = %v, want ErrAccessDenied", name, err)
		}
	}
	if _, err := reg.Call(context.Background(), zhang, "no_such", nil); !errors.Is(err, skills.ErrUnknownSkill) {
		t.Errorf("unknown: err = %v", err)
	}
	if rec.count() != 0 {
		t.Errorf("backend called %d times", rec.count())
	}
}

func TestConfirm(t *testing.T) {
	rec := &recorder{body: `{"reset":true}`}
	s := &skills.Skill{Name: "it_password_reset", Description: "reset a password", Endpoint: "/it/reset",
		Parameters: json.RawMessage(`{"type":"object","properties":{"system":{"type":"string","enum":["vpn","email"]}},"required":["system"]}`),
		Confirm:    &skills.ConfirmPolicy{Required: true, Prompt: "重置 {{.Caller.UserID}} 的 {{.Args.system}} 密码"}}
	reg, err := skills.NewRegistry(unsigned(s), skills.Options{BaseURL: serverURL(t, rec), Getenv: secrets})
	if err != nil {
		t.Fatal(err)
	}
	tool := reg.ToolsFor(zhang)[0]
	if !tool.Spec().Confirm {
		t.Errorf("Spec.Confirm not set")
	}
	// The model asks to reset: nothing happens but a question.
	res, err := tool.Call(context.Background(), json.RawMessage(`{"system":"vpn"}`))
	if err != nil || res.Confirm == nil {
		t.Fatalf("Call = %+v, %v; want a Confirm", res, err)
	}
	if res.Confirm.Prompt != "重置 zhangsan 的 vpn 密码" || res.Confirm.Skill != "it_password_reset" || string(res.Confirm.Args) != `{"system":"vpn"}` {
		t.Errorf("Confirm = %+v", res.Confirm)
	}
	if rec.count() != 0 || len(res.Body) != 0 {
		t.Fatalf("the backend was called before confirmation")
	}
	// Bad arguments fail before asking the user anything.
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"system":"oa"}`)); !errors.Is(err, skills.ErrInvalidArguments) {
		t.Errorf("err = %v, want ErrInvalidArguments", err)
	}
	// The user said 「确认」: the gateway runs it.
	res, err = reg.CallConfirmed(context.Background(), zhang, res.Confirm.Skill, res.Confirm.Args)
	if err != nil || res.Confirm != nil || string(res.Body) != `{"reset":true}` || rec.count() != 1 {
		t.Fatalf("CallConfirmed = %+v, %v, backend calls %d", res, err, rec.count())
	}
	if rec.reqs[0].Header.Get(skills.HeaderUserID) != "zhangsan" {
		t.Errorf("confirmed call went out without the caller's identity")
	}
}
