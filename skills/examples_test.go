package skills_test

import (
	"os"
	"testing"

	"github.com/hermes-gw/hermes/skills"
)

// TestExamples: the MCP and command examples in examples/ load and pass the
// checker once their programs are allowed.
func TestExamples(t *testing.T) {
	fsys := os.DirFS("examples")
	defs, err := skills.LoadDir(fsys)
	if err != nil || len(defs) != 3 {
		t.Fatalf("LoadDir = %d skills, %v", len(defs), err)
	}
	allow := []string{"/opt/hermes/bin/asset-mcp", "/opt/hermes/bin/vpn-session"}
	for _, f := range skills.Check(fsys, skills.CheckOptions{CommandAllowList: allow}) {
		t.Errorf("%s", f)
	}
	if _, err := skills.NewRegistry(defs, skills.Options{CommandAllowList: allow}); err != nil {
		t.Errorf("NewRegistry: %v", err)
	}
}
