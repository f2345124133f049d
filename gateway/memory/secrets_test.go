package memory

import "testing"

func TestHoldsSecret(t *testing.T) {
	for text, want := range map[string]bool{
		"我的 VPN 密码是 Abc12345":                      true,
		"邮箱密码：hunter22":                            true,
		"验证码 482913":                               true,
		"token=abcd1234":                           true,
		"API key sk-4f9aQ2xY7LmN0pQr8s":            true,
		"我在上海办公室":                                  false,
		"已执行：重置 VPN 密码":                            false,
		"2026-12-01 提交了 VPN 申请 VPN-1001":           false,
		"叫我小王":                                     false,
		"ghp_16C7e42F292c6912E7710c838347Ae178B4a": true,
	} {
		if got := holdsSecret(text); got != want {
			t.Errorf("holdsSecret(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestParseCommand(t *testing.T) {
	remember, list, forget := []string{"记住", "/remember"}, []string{"/memory", "我的记忆"}, []string{"/forget", "忘掉"}
	for text, want := range map[string][2]string{
		"记住 我在上海办公室":    {cmdRemember, "我在上海办公室"},
		"记住：叫我小王":       {cmdRemember, "叫我小王"},
		"/remember 12F": {cmdRemember, "12F"},
		"/memory":       {cmdList, ""},
		"我的记忆。":         {cmdList, ""},
		"/forget 2":     {cmdForget, "2"},
		"/forget all":   {cmdForget, "all"},
		"忘掉上海":          {cmdForget, "上海"},
		"/forgetful":    {"", ""},
		"我的记忆力不好":       {"", ""},
		"你好":            {"", ""},
	} {
		cmd, arg, _ := parseCommand(text, remember, list, forget)
		if cmd != want[0] || arg != want[1] {
			t.Errorf("parseCommand(%q) = %q, %q; want %q, %q", text, cmd, arg, want[0], want[1])
		}
	}
}

func TestParseProposal(t *testing.T) {
	if got, err := parseProposal(`{"memories":[{"text":"负责华东区的销售"}]}`); err != nil || len(got) != 1 {
		t.Errorf("a valid proposal: %q, %v", got, err)
	}
	for name, bad := range map[string]string{
		"unknown field": `{"memories":[{"text":"a","why":"b"}]}`,
		"too many":      `{"memories":[{"text":"a"},{"text":"b"},{"text":"c"},{"text":"d"}]}`,
		"empty text":    `{"memories":[{"text":" "}]}`,
		"secret":        `{"memories":[{"text":"密码是 abc12345"}]}`,
		"masked":        `{"memories":[{"text":"手机 138****5678"}]}`,
		"not json":      `我记住了`,
		"trailing":      `{"memories":[]} {}`,
	} {
		if got, err := parseProposal(bad); err == nil {
			t.Errorf("%s: accepted %q", name, got)
		}
	}
}
