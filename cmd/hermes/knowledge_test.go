package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

func TestKnowledgeCommands(t *testing.T) {
	cfg := writeConfig(t, "database:\n  url: "+storetest.URL(t)+"\nmodel:\n  provider: offline\nknowledge:\n  corps: [ww-acme]\n")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leave := write("休假制度.md", "# 休假制度\n\n## 婚假\n\n员工结婚可享受婚假 3 天。\n")
	pay := write("pay.csv", "职级,月薪上限\n总监,58000\n")
	bad := write("tool.bin", "MZ\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")

	code, out, errOut := runCmd(t, "", "knowledge", "add", "--config", cfg, leave)
	if code != 0 || !strings.Contains(out, "added 1 休假制度") {
		t.Fatalf("add: %d %q %q", code, out, errOut)
	}
	if code, out, _ = runCmd(t, "", "knowledge", "add", "--config", cfg, leave); code != 0 || !strings.HasPrefix(out, "unchanged 1") {
		t.Fatalf("re-add: %d %q", code, out)
	}
	code, out, errOut = runCmd(t, "", "knowledge", "add", pay, "--config", cfg, "--title", "薪酬等级表", "--access", "departments=9")
	if code != 0 || !strings.Contains(out, "added 2 薪酬等级表") {
		t.Fatalf("add restricted: %d %q %q", code, out, errOut)
	}
	code, _, errOut = runCmd(t, "", "knowledge", "add", "--config", cfg, bad)
	if code != 1 || !strings.Contains(errOut, "tool.bin") || !strings.Contains(errOut, "unsupported") {
		t.Fatalf("unreadable file: exit %d, %q; want 1 naming it and the reason", code, errOut)
	}

	code, out, _ = runCmd(t, "", "knowledge", "list", "--config", cfg)
	if code != 0 || !regexp.MustCompile(`(?m)^2\s+薪酬等级表.*departments=9`).MatchString(out) || strings.Count(out, "\n") != 3 {
		t.Fatalf("list: %d %q", code, out)
	}

	code, out, _ = runCmd(t, "", "knowledge", "search", "总监月薪上限多少", "--config", cfg, "--as", "zhangsan", "--dept", "2")
	if code != 0 || strings.Contains(out, "58000") {
		t.Fatalf("an outsider sees the salary table: %d %q", code, out)
	}
	code, out, _ = runCmd(t, "", "knowledge", "search", "总监月薪上限多少", "--config", cfg, "--as", "lihr", "--dept", "9")
	if code != 0 || !strings.Contains(out, "58000") || !strings.Contains(out, "《薪酬等级表》") {
		t.Fatalf("HR does not: %d %q", code, out)
	}
	if code, out, _ = runCmd(t, "", "knowledge", "delete", "--config", cfg, "2"); code != 0 || !strings.Contains(out, "deleted 2") {
		t.Fatalf("delete: %d %q", code, out)
	}
	if code, out, _ = runCmd(t, "", "knowledge", "search", "--config", cfg, "--as", "lihr", "--dept", "9", "总监月薪上限多少"); code != 0 || strings.Contains(out, "58000") {
		t.Fatalf("a deleted document answers: %d %q", code, out)
	}

	// knowledge.dir synced on demand: the folder's files added, a refused
	// one named and the exit 1.
	folder := t.TempDir()
	cfg = writeConfig(t, "database:\n  url: "+storetest.URL(t)+"\nmodel:\n  provider: offline\nknowledge:\n  dir: "+folder+"\n")
	if err := os.WriteFile(filepath.Join(folder, "休假制度.md"), []byte("# 休假制度\n\n## 婚假\n\n婚假 3 天。\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "tool.bin"), []byte("MZ\x00\x00\x00\x00\x00\x00\x00\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCmd(t, "", "knowledge", "sync", "--config", cfg)
	if code != 1 || !strings.Contains(out, "added 休假制度.md") || !strings.Contains(errOut, "tool.bin") {
		t.Fatalf("sync: exit %d, %q, %q", code, out, errOut)
	}
}
