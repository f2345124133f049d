package skills_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

func TestNewRegistry(t *testing.T) {
	b := &skills.Skill{Name: "b_skill", Description: "b", Endpoint: "https://b.example.com/x"}
	a := &skills.Skill{Name: "a_skill", Description: "a", Endpoint: "/a", Usage: "Use it well."}

	t.Run("OK", func(t *testing.T) {
		reg, err := skills.NewRegistry(unsigned(b, a), skills.Options{BaseURL: "http://hr.internal"})
		if err != nil {
			t.Fatalf("NewRegistry: %v", err)
		}
		var names []string
		for _, tool := range reg.ToolsFor(zhang) {
			names = append(names, tool.Spec().Name)
		}
		if got := strings.Join(names, ","); got != "a_skill,b_skill" {
			t.Errorf("tools = %s, want sorted by name", got)
		}
		spec := reg.ToolsFor(zhang)[0].Spec()
		if spec.Description != "a\n\nUse it well." || string(spec.Parameters) != `{"properties":{},"type":"object"}` {
			t.Errorf("spec = %+v", spec)
		}
		if got := reg.Skills()[0]; got.Method != "POST" || got.Timeout != skills.DefaultTimeout {
			t.Errorf("defaults not applied: %+v", got)
		}
		if a.Method != "" {
			t.Errorf("NewRegistry changed its input: %+v", a)
		}
	})
	for _, tc := range []struct {
		name string
		defs []*skills.Skill
		opts skills.Options
		want string
	}{
		{"ErrPathWithoutBaseURL", []*skills.Skill{a}, skills.Options{}, `a_skill: endpoint: "/a" is a path but no base URL`},
		{"ErrBadBaseURL", []*skills.Skill{a}, skills.Options{BaseURL: "hr.internal"}, "base URL"},
		{"ErrDuplicate", []*skills.Skill{b, b}, skills.Options{}, `duplicate skill name "b_skill"`},
		{"ErrInvalidSkill", []*skills.Skill{{Name: "Bad", Description: "x", Endpoint: "/a"}}, skills.Options{BaseURL: "http://x"}, "Bad: name:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := skills.NewRegistry(unsigned(tc.defs...), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRegistry_CheckEnv(t *testing.T) {
	reg, err := skills.NewRegistry([]*skills.Skill{hrSkill()}, skills.Options{BaseURL: "http://x", Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	msg := reg.CheckEnv().Error()
	for _, want := range []string{
		"skill hr_leave_apply: auth.token_env: environment variable HR_TOKEN is not set",
		"skill hr_leave_apply: identity.hmac_key_env: environment variable HR_HMAC is not set",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("CheckEnv = %q, want %q", msg, want)
		}
	}
	reg, _ = skills.NewRegistry([]*skills.Skill{hrSkill()}, skills.Options{BaseURL: "http://x", Getenv: secrets})
	if err := reg.CheckEnv(); err != nil {
		t.Errorf("CheckEnv = %v with everything set", err)
	}
}

// sampleRegistry loads the sample skills against a demo backend.
func sampleRegistry(t *testing.T, backend *demobackend.Backend, async skills.AsyncRegistrar) *skills.Registry {
	t.Helper()
	defs, err := skills.LoadDir(skills.SamplesFS())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := skills.NewRegistry(defs, skills.Options{BaseURL: serverURL(t, backend), Now: func() time.Time { return testNow },
		Getenv: env(map[string]string{"HERMES_DEMO_HR_KEY": string(testKey), "HERMES_DEMO_IT_KEY": string(testKey)}), Async: async})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestSamples_AgainstDemoBackend calls every sample skill for zhangsan and
// checks the demo backend answered about him.
func TestSamples_AgainstDemoBackend(t *testing.T) {
	backend := demobackend.New(testKey, func() time.Time { return testNow })
	reg := sampleRegistry(t, backend, newFakeGateway(t))
	args := map[string]string{
		"hr_leave_balance":   `{}`,
		"hr_payslip_summary": `{"month":"2026-02"}`,
		"hr_policy_search":   `{"query":"年假 结转"}`,
		"it_password_reset":  `{"system":"vpn"}`,
		"it_ticket_create":   `{"title":"打印机卡纸","description":"3 楼打印机卡纸"}`,
		"it_ticket_status":   `{"ticket_id":"INC-1001"}`,
		"it_vpn_access":      `{"reason":"出差","days":7}`,
		"it_ticket_weekly":   `{}`,
		"hr_team_leave":      `{}`,
	}
	want := map[string]string{
		"hr_leave_balance":   "剩余 5 天",
		"hr_payslip_summary": "实发 15368 元",
		"hr_policy_search":   "年假管理办法",
		"it_password_reset":  "已重置张三的 VPN 密码",
		"it_ticket_create":   "已创建工单 INC-1004",
		"it_ticket_status":   "笔记本连不上 VPN",
		"it_vpn_access":      "已提交审批",
		"it_ticket_weekly":   "上周共新建工单 37 张",
		"hr_team_leave":      "年假合计已用 13 天",
	}
	tools := reg.ToolsFor(zhang)
	if len(tools) != len(args) {
		t.Errorf("%d tools, want %d", len(tools), len(args))
	}
	for _, tool := range tools {
		name := tool.Spec().Name
		res, err := tool.Call(context.Background(), json.RawMessage(args[name]))
		if err == nil && res.Confirm != nil {
			res, err = reg.CallConfirmed(context.Background(), zhang, res.Confirm.Skill, res.Confirm.Args)
		}
		if err != nil || !strings.Contains(string(res.Body), want[name]) {
			t.Errorf("%s = %q, %v; want %q", name, res.Body, err, want[name])
		}
	}
	for _, c := range backend.Calls() {
		if c.Identity.UserID != "zhangsan" || c.UserName != "张三" || c.Status >= 300 {
			t.Errorf("backend saw %+v, want zhangsan", c)
		}
		if c.Path == "/it/password/reset" && (c.ContentType != skills.ContentForm || c.Body != "target_system=vpn") {
			t.Errorf("reset sent %s %q, want the form with the mapped name", c.ContentType, c.Body)
		}
	}
}
