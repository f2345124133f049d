package skills_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hermes-gw/hermes/skills"
)

func TestLive_Reload(t *testing.T) {
	rec := &recorder{body: `{"v":1}`}
	base := serverURL(t, rec)
	files := fstest.MapFS{"a/SKILL.md": skill("name: a", "description: first", "endpoint: /a")}
	build := func() (*skills.Registry, error) {
		return skills.LoadRegistry(files, skills.Options{BaseURL: base, DefaultHMACKeyEnv: "HR_HMAC", Getenv: secrets})
	}
	reg, err := build()
	if err != nil {
		t.Fatal(err)
	}
	live := skills.NewLive(reg)
	inFlight := live.Load().ToolsFor(zhang) // a run started before the reload

	// A broken edit: the new set is refused, the old one stays.
	files["a/SKILL.md"] = skill("name: a", "description: second", "endpoint: /a", "timout: 5s")
	files["b/SKILL.md"] = skill("name: b", "description: new", "endpoint: /b")
	err = live.Reload(build)
	if err == nil || !strings.Contains(err.Error(), "a/SKILL.md:5: timout: unknown field") || !strings.Contains(err.Error(), "keeping the current skills") {
		t.Fatalf("Reload = %v, want the broken file named", err)
	}
	if live.Load() != reg {
		t.Fatalf("a refused reload replaced the registry")
	}

	// Fixed: the new set is live; the old run keeps its tools.
	files["a/SKILL.md"] = skill("name: a", "description: second", "endpoint: /a")
	if err := live.Reload(build); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range live.Load().ToolsFor(zhang) {
		names = append(names, tool.Spec().Name+"="+tool.Spec().Description)
	}
	if got := strings.Join(names, ","); !strings.HasPrefix(got, "a=second") || !strings.Contains(got, "b=new") {
		t.Errorf("after reload: %s", got)
	}
	if len(inFlight) != 1 || !strings.HasPrefix(inFlight[0].Spec().Description, "first") {
		t.Errorf("in-flight tools changed: %+v", inFlight[0].Spec())
	}
	if _, err := inFlight[0].Call(context.Background(), json.RawMessage(`{}`)); err != nil {
		t.Errorf("in-flight tool after reload: %v", err)
	}
}
