package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// reportsConfig is a configuration with one WeCom app, whose users
// reports can be sent to.
func reportsConfig(t *testing.T) string {
	skillsDir, _ := filepath.Abs("../../skills/samples")
	return writeConfig(t, "database:\n  url: "+storetest.URL(t)+"\nmodel:\n  provider: offline\nskills:\n  dir: "+skillsDir+
		"\n  base_url: http://127.0.0.1:9\nwecom:\n  apps:\n    - name: app-hr\n      corp_id: wx5823bf96d3bd56c7\n      agent_id: \"1000002\"\n"+
		"      secret: test-app-secret-0123456789\n      token: QDG6eK\n      encoding_aes_key: jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C\n")
}

func TestReportsCommands(t *testing.T) {
	cfg := reportsConfig(t)
	if code, _, errOut := runCmd(t, "", "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	add := func(extra ...string) (int, string, string) {
		args := append([]string{"reports", "add", "--config", cfg, "--name", "上周工单统计", "--cron", "0 9 * * 1",
			"--owner", "wecom/app-hr/wx5823bf96d3bd56c7/zhangsan", "--target", "wecom/app-hr/single/zhangsan", "--skill", "it_ticket_weekly"}, extra...)
		return runCmd(t, "", args...)
	}
	// Bad input: a clear error, nothing saved.
	for name, extra := range map[string][]string{
		"cron":   {"--cron", "0 9 * *"},
		"group":  {"--target", "wecom/app-hr/group/wrkSFfCgAA"},
		"skill":  {"--skill", "hr_fire_everyone"},
		"target": {"--target", "feishu/bot/single/ou_1"},
	} {
		if code, _, errOut := add(extra...); code == 0 || !strings.Contains(errOut, "bad report") {
			t.Errorf("%s: code %d, stderr %q", name, code, errOut)
		}
	}
	if _, out, _ := runCmd(t, "", "reports", "list", "--config", cfg); strings.TrimSpace(out) != "" {
		t.Fatalf("bad input saved a report: %s", out)
	}
	if code, out, errOut := add(); code != 0 || !strings.Contains(out, "report 1 created") {
		t.Fatalf("add: code %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, "", "reports", "pause", "--config", cfg, "1"); code != 0 {
		t.Fatal(errOut)
	}
	if _, out, _ := runCmd(t, "", "reports", "list", "--config", cfg); !strings.Contains(out, "每周一 09:00") || !strings.Contains(out, "paused") {
		t.Errorf("list: %s", out)
	}
	if code, out, errOut := runCmd(t, "", "reports", "run-now", "--config", cfg, "1"); code != 0 || !strings.Contains(out, "run 1 queued") {
		t.Fatalf("run-now: %s %s", out, errOut)
	}
	if _, out, _ := runCmd(t, "", "reports", "history", "--config", cfg, "1"); !strings.Contains(out, "run 1  manual") {
		t.Errorf("history: %s", out)
	}
	if code, _, errOut := runCmd(t, "", "reports", "delete", "--config", cfg, "1"); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := runCmd(t, "", "reports", "delete", "--config", cfg, "1"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("deleting twice: %s", errOut)
	}
}
