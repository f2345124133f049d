package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/config"
)

// TestWordsPrintsTheCatalogue: `hermes words` prints every word as YAML a
// configuration accepts back, the defaults without --config and the file's
// values with it, the console's catalogue included.
func TestWordsPrintsTheCatalogue(t *testing.T) {
	code, out, errOut := runCmd(t, "", "words")
	if code != 0 {
		t.Fatalf("hermes words: code %d\n%s", code, errOut)
	}
	base := "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"
	cfg, err := config.ParseConfig([]byte(base+out), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("the printed words do not load back: %v\n%s", err, out)
	}
	if cfg.Messages.Empty != config.DefaultMessages.Empty || cfg.Messages.Agent.MaxSteps != config.DefaultMessages.Agent.MaxSteps ||
		cfg.Messages.Console["zh"]["title"] != "Hermes 控制台" || cfg.Messages.Console["en"]["login"] == "" {
		t.Fatalf("printed words lack the defaults:\n%s", out)
	}

	path := filepath.Join(t.TempDir(), "hermes.yaml")
	if err := os.WriteFile(path, []byte(base+"messages:\n  empty: 没有答案\n  console:\n    zh:\n      title: 某某公司\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCmd(t, "", "words", "--config", path)
	if code != 0 || !strings.Contains(out, "empty: 没有答案") || !strings.Contains(out, "title: 某某公司") || !strings.Contains(out, "max_steps:") {
		t.Fatalf("hermes words --config: code %d\n%s%s", code, out, errOut)
	}
}
