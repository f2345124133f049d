package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/skills"
)

// The compact skill index lists every skill the user may use, one short
// line each (about a tenth of a full definition), so the model can see what
// exists without paying for every schema. It asks for the full definitions
// of the ones it needs with the built-in load_skills, or calls a listed
// skill directly; either way the definition joins the tools block for the
// rest of the run.

// toolLoadSkills is the built-in that loads definitions from the index.
const toolLoadSkills = "load_skills"

var loadSkillsDef = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name:        toolLoadSkills,
	Description: "Load skills of the skill index by name.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}},` +
		`"required":["names"]}`),
}}

// indexLineRunes bounds the summary of a skill without a display name.
const indexLineRunes = 16

// skillIndex is the index block of the system prompt.
func skillIndex(specs []skills.Spec) string {
	var b strings.Builder
	b.WriteString("<SKILL_INDEX>\nAll your skills. Load one not in your tools with load_skills.")
	for _, s := range specs {
		fmt.Fprintf(&b, "\n- %s: %s", s.Name, indexLine(s))
	}
	b.WriteString("\n</SKILL_INDEX>")
	return b.String()
}

// indexLine is the display name, or the start of the description's first
// sentence.
func indexLine(s skills.Spec) string {
	if s.DisplayName != "" {
		return s.DisplayName
	}
	line := strings.TrimSpace(s.Description)
	if i := strings.IndexAny(line, "。；;\n"); i >= 0 {
		line = line[:i]
	}
	if i := strings.Index(line, ". "); i >= 0 {
		line = line[:i]
	}
	if utf8.RuneCountInString(line) > indexLineRunes {
		line = string([]rune(line)[:indexLineRunes]) + "…"
	}
	return line
}

// displayName is what users call a skill.
func displayName(s skills.Spec) string { return cmpOr(s.DisplayName, s.Name) }

// loadArgs are the arguments of a load_skills call.
type loadArgs struct {
	Names []string `json:"names"`
}

// loadSkills answers a load_skills call: the skills it names join the
// offer (installed by the caller, in account order). Names the user may not
// use, or that do not exist, are reported; access was applied when the
// turn's tools were bound, so they cannot be loaded.
func (r *run) loadSkills(args json.RawMessage) (observation, []*toolEntry) {
	var a loadArgs
	if err := json.Unmarshal(args, &a); err != nil || len(a.Names) == 0 {
		return observation{text: `error: invalid_arguments: load_skills takes {"names": ["skill_name", ...]} with names from the skill index`,
			fail: invalidArgsClass()}, nil
	}
	var loaded []*toolEntry
	var ok, already, unknown []string
	for _, name := range a.Names {
		switch e := r.indexEntry(name); {
		case r.byName[name] != nil:
			already = append(already, name)
		case e == nil:
			unknown = append(unknown, name)
		case !slices.ContainsFunc(loaded, func(x *toolEntry) bool { return x.spec.Name == name }):
			loaded = append(loaded, e)
			ok = append(ok, name)
		}
	}
	var b strings.Builder
	if len(ok) > 0 {
		fmt.Fprintf(&b, "loaded: %s. Call them now.", strings.Join(ok, ", "))
		if r.opts.ToolsInText { // no tools block to carry them
			for _, e := range loaded {
				b.WriteString("\n\n" + textDefinition(e))
			}
		}
	}
	if len(already) > 0 {
		fmt.Fprintf(&b, "\nalready available: %s.", strings.Join(already, ", "))
	}
	if len(unknown) > 0 {
		fmt.Fprintf(&b, "\nnot in the skill index: %s.", strings.Join(unknown, ", "))
	}
	return observation{text: strings.TrimSpace(b.String()), ok: len(unknown) == 0}, loaded
}

// indexEntry builds the entry of a skill of the turn that is not offered
// yet, nil when there is none (or the index is off).
func (r *run) indexEntry(name string) *toolEntry {
	if !r.indexOn {
		return nil
	}
	for _, t := range r.turn.Tools {
		if spec := t.Spec(); spec.Name == name {
			return newToolEntry(t, spec)
		}
	}
	return nil
}

// install adds loaded skills to the offer, keeping Turn.Tools order so the
// tools block stays deterministic.
func (r *run) install(loaded []*toolEntry) {
	if len(loaded) == 0 {
		return
	}
	entries := slices.Clone(r.entries)
	for _, e := range loaded {
		if r.byName[e.spec.Name] == nil {
			entries = append(entries, e)
		}
	}
	order := map[string]int{}
	for i, t := range r.turn.Tools {
		order[t.Spec().Name] = i
	}
	slices.SortStableFunc(entries, func(a, b *toolEntry) int { return order[a.spec.Name] - order[b.spec.Name] })
	r.setTools(entries)
}

// indexedNames are the index's skills not offered in full: names a call
// may use, loading the skill on the way.
func (r *run) indexedNames() []string {
	if !r.indexOn {
		return nil
	}
	var out []string
	for _, t := range r.turn.Tools {
		if name := t.Spec().Name; r.byName[name] == nil {
			out = append(out, name)
		}
	}
	return out
}
