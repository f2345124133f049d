package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, stdio{in: strings.NewReader(stdin), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hermes.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUsageAndVersion(t *testing.T) {
	if code, _, errOut := runCmd(t, ""); code != 2 || !strings.Contains(errOut, "usage") {
		t.Fatalf("no args: code %d, stderr %q", code, errOut)
	}
	if code, _, _ := runCmd(t, "", "frobnicate"); code != 2 {
		t.Fatalf("unknown command: code %d, want 2", code)
	}
	if code, out, _ := runCmd(t, "", "version"); code != 0 || !strings.HasPrefix(out, "hermes ") {
		t.Fatalf("version: code %d out %q", code, out)
	}
}

func TestBadConfigExitsNonZeroNamingTheKey(t *testing.T) {
	cfg := writeConfig(t, "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  base_url: https://api.example.com/v1\n")
	for _, cmd := range []string{"serve", "migrate", "chat"} {
		code, _, errOut := runCmd(t, "", cmd, "--config", cfg)
		if code != 1 || !strings.Contains(errOut, "model.name") {
			t.Fatalf("%s: code %d, stderr %q; want 1 and the key model.name", cmd, code, errOut)
		}
	}
	if code, _, errOut := runCmd(t, "", "serve", "--config", "/no/such/file.yaml"); code != 1 || !strings.Contains(errOut, "no such file") {
		t.Fatalf("missing file: code %d stderr %q", code, errOut)
	}
}

func TestMigrateAndChatOnTheConsoleChannel(t *testing.T) {
	url := storetest.URL(t)
	skillsDir, _ := filepath.Abs("../../skills/samples")
	cfg := writeConfig(t, "database:\n  url: "+url+"\nmodel:\n  provider: offline\nskills:\n  dir: "+skillsDir+"\n  base_url: http://127.0.0.1:9\n")
	if code, out, errOut := runCmd(t, "", "migrate", "--config", cfg); code != 0 || !strings.Contains(out, "migrations applied") {
		t.Fatalf("migrate: code %d out %q err %q", code, out, errOut)
	}
	// No skill backend here: the skill call fails and the offline model says so.
	code, out, errOut := runCmd(t, "你好\n\n", "chat", "--config", cfg, "--user", "lisi")
	if code != 0 {
		t.Fatalf("chat: code %d, stderr %s", code, errOut)
	}
	if !strings.Contains(out, "Hermes> ") || !strings.Contains(out, "离线演示模型") {
		t.Fatalf("chat output lacks the agent's reply:\n%s", out)
	}

	// The run's trace is readable with `hermes runs show`.
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var runID string
	if err := conn.QueryRow(context.Background(), `SELECT id FROM runs`).Scan(&runID); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCmd(t, "", "runs", "show", "--config", cfg, runID)
	if code != 0 || !strings.Contains(out, "run "+runID) || !strings.Contains(out, "#1 model") || !strings.Contains(out, "reply: ") {
		t.Fatalf("runs show: code %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut = runCmd(t, "", "runs", "show", "--config", cfg, "no-such-run"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("unknown run: code %d stderr %q", code, errOut)
	}

	// Found without SQL: by user, chat, time and stop reason, and shown by
	// the platform message it answered.
	var msgID, chatID string
	if err := conn.QueryRow(context.Background(), `SELECT platform_msg_id, chat_id FROM inbound_messages`).Scan(&msgID, &chatID); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{}, {"--user", "lisi"}, {"--chat", chatID}, {"--since", "1h"}, {"--since", "2020-01-01", "--until", "2999-01-01T00:00:00Z"},
		{"--stop", "finished", "--user", "lisi"}} {
		code, out, errOut := runCmd(t, "", append([]string{"runs", "list", "--config", cfg}, args...)...)
		if code != 0 || !strings.Contains(out, runID) || !strings.Contains(out, "user lisi") || !strings.Contains(out, `"你好"`) {
			t.Errorf("runs list %v: code %d\n%s%s", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{{"--user", "zhangsan"}, {"--stop", "timeout"}, {"--until", "1h"}} {
		if code, out, _ := runCmd(t, "", append([]string{"runs", "list", "--config", cfg}, args...)...); code != 0 || strings.Contains(out, runID) {
			t.Errorf("runs list %v: code %d, listed the run\n%s", args, code, out)
		}
	}
	if code, _, _ := runCmd(t, "", "runs", "list", "--config", cfg, "--since", "yesterday"); code != 2 {
		t.Errorf("bad --since: code %d, want 2", code)
	}
	code, out, errOut = runCmd(t, "", "runs", "show", "--config", cfg, "--message", msgID)
	if code != 0 || !strings.Contains(out, "run "+runID) {
		t.Fatalf("runs show --message: code %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut = runCmd(t, "", "runs", "show", "--config", cfg, "--message", "nope"); code != 1 || !strings.Contains(errOut, "no run answered") {
		t.Fatalf("unknown message: code %d stderr %q", code, errOut)
	}
}

// TestHelpExitsZero: asking for help is not an error.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"help", "serve"}, {"serve", "--help"}, {"migrate", "-h"},
		{"chat", "--help"}, {"demo", "--help"}, {"runs", "--help"}, {"runs", "help"}, {"runs", "list", "--help"},
		{"runs", "show", "--help"}, {"skills", "--help"}, {"skills", "check", "--help"}, {"skills", "import-openapi", "--help"}} {
		code, out, errOut := runCmd(t, "", args...)
		if text := strings.ToLower(out + errOut); code != 0 || !strings.Contains(text, "usage") {
			t.Errorf("hermes %v: code %d\n%s%s", args, code, out, errOut)
		}
	}
	if _, out, _ := runCmd(t, "", "help"); !strings.Contains(out, "runs") || !strings.Contains(out, "serve") {
		t.Errorf("hermes help lists no commands:\n%s", out)
	}
}

func TestDemoPlaysTheConversationWithIdentityInjection(t *testing.T) {
	t.Setenv("DATABASE_URL", storetest.URL(t))
	t.Setenv("HERMES_MODEL_BASE_URL", "")
	code, out, errOut := runCmd(t, "", "demo")
	if code != 0 {
		t.Fatalf("demo: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"offline demo model", "我还有几天年假？", "[backend] POST /hr/leave-balance → HTTP 200", "user=zhangsan", "剩余",
		"回复「确认」以执行", "已执行：已重置", "[backend] POST /it/vpn/access → HTTP 202", "已处理完成",
		"上周共新建工单 37 张", "| 网络故障 | 12 | 10 |", "[report] chart written to",
		// The screenshot reached the model as an image and the PDF as its
		// text.
		"收到了：1 张图片，文件「报销单.pdf」",
		// Memory: the note is kept, recalled after /reset, and listed with
		// what the model learned from the statement.
		"好的，我记住了：我在上海办公室，工位 12F-031", "你之前告诉过我：我在上海办公室，工位 12F-031",
		". 我在上海办公室，工位 12F-031（", ". 负责华东区的销售（",
		// The handbook answers a rule question, its source named by Hermes.
		"《差旅报销标准》2026版: 4 passages", "你> 出差住酒店一晚能报多少？", "每晚不超过 550 元",
		"来源：《差旅报销标准》2026版 · 住宿",
		// and the outcome of the confirmed reset.
		". " + time.Now().Format("2006-01-02") + " 已执行：已重置"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
