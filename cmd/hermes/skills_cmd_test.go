package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSkillsCheck(t *testing.T) {
	samples, _ := filepath.Abs("../../skills/samples")
	code, out, errOut := runCmd(t, "", "skills", "check", samples, "--base-url", "https://hr.example.com")
	if code != 0 || !strings.Contains(out, "0 error(s), 0 warning(s)") {
		t.Errorf("samples: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name, "SKILL.md")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	broken := write("hr_broken", "---\nname: hr_broken\ndescription: d\nendpoint: /x\ntimout: 5s\n---\n")
	slow := write("hr_slow", "---\nname: hr_slow\ndescription: d\nendpoint: https://hr.example.com/x\ntimeout: 45s\n"+
		"identity: {hmac_key_env: K}\n---\n")
	code, out, errOut = runCmd(t, "", "skills", "check", "--run-budget", "90s", dir)
	if code != 1 || !strings.Contains(out, broken+":5: timout: error: unknown field") ||
		!strings.Contains(out, slow+":5: timeout: warning:") || !strings.Contains(errOut, "1 error(s)") {
		t.Errorf("broken: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if code, _, _ := runCmd(t, "", "skills", "check"); code != 2 {
		t.Errorf("no DIR: code %d, want usage", code)
	}
	if code, _, _ := runCmd(t, "", "skills", "frob"); code != 2 {
		t.Errorf("unknown subcommand: code %d, want usage", code)
	}
}

func TestSkillsImportOpenAPI(t *testing.T) {
	spec, _ := filepath.Abs("../../skills/testdata/petstore.yaml")
	code, out, errOut := runCmd(t, "", "skills", "import-openapi", spec)
	if code != 0 || !strings.Contains(out, "# list_pets/SKILL.md") || !strings.Contains(out, "name: create_pet") {
		t.Fatalf("print: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	dir := t.TempDir()
	if code, out, errOut := runCmd(t, "", "skills", "import-openapi", spec, "--out", dir); code != 0 || !strings.Contains(out, "5 skill(s) written") {
		t.Fatalf("write: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "get_pet_by_id", "SKILL.md")); err != nil {
		t.Errorf("get_pet_by_id not written: %v", err)
	}
	// The result loads (warnings only: review texts, identity...).
	if code, out, _ := runCmd(t, "", "skills", "check", dir); code != 0 || !strings.Contains(out, "0 error(s)") {
		t.Errorf("check of the import: code %d\n%s", code, out)
	}
	if code, _, errOut := runCmd(t, "", "skills", "import-openapi", spec, "--out", dir); code != 1 || !strings.Contains(errOut, "--force") {
		t.Errorf("second import: code %d, stderr %q; want a refusal to overwrite", code, errOut)
	}
}
