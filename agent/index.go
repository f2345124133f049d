package agent

import (
	"cmp"
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
	Description: "Load skills of the skill index by name, or search them by query.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}},` +
		`"query":{"type":"string"}}}`),
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
	Query string   `json:"query"`
}

// loadSkills answers a load_skills call: the skills it names join the
// offer (installed by the caller, in account order). Names the user may not
// use, or that do not exist, are reported; access was applied when the
// turn's tools were bound, so they cannot be loaded.
func (r *run) loadSkills(args json.RawMessage) (observation, []*toolEntry) {
	var a loadArgs
	if err := json.Unmarshal(args, &a); err != nil || len(a.Names) == 0 && strings.TrimSpace(a.Query) == "" {
		return observation{text: `error: invalid_arguments: load_skills takes {"names": ["skill_name", ...]} with names from the skill index, ` +
			`or {"query": "the user's words"}`, fail: invalidArgsClass()}, nil
	}
	a.Names = a.Names[:min(len(a.Names), maxLoadNames)]
	found := r.searchSkills(a.Query)
	if strings.TrimSpace(a.Query) != "" && len(found) == 0 {
		return observation{text: fmt.Sprintf("no skill matches %q; try other words, or answer without a skill", cutHead(a.Query, 100)), ok: true}, nil
	}
	var loaded []*toolEntry
	var ok, already, unknown, withdrawn []string
	for _, name := range append(a.Names, found...) {
		switch e := r.indexEntry(name); {
		case r.withdrawn[name]:
			withdrawn = append(withdrawn, name)
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
		var named []string
		for _, e := range loaded {
			named = append(named, fmt.Sprintf("%s (%s)", e.spec.Name, indexLine(e.spec)))
		}
		fmt.Fprintf(&b, "loaded: %s. Call the one that fits now.", strings.Join(named, ", "))
		if r.opts.ToolsInText { // no tools block to carry them
			for _, e := range loaded {
				b.WriteString("\n\n" + textDefinition(e))
			}
		}
	}
	if len(already) > 0 {
		fmt.Fprintf(&b, "\nalready available: %s.", strings.Join(already, ", "))
	}
	if len(withdrawn) > 0 {
		fmt.Fprintf(&b, "\nwithdrawn: %s failed too often and cannot be used in this conversation; tell the user this system is unavailable right now.",
			strings.Join(withdrawn, ", "))
	}
	if len(unknown) > 0 {
		fmt.Fprintf(&b, "\nnot in the skill index: %s.", strings.Join(unknown, ", "))
	}
	return observation{text: strings.TrimSpace(b.String()), ok: len(unknown) == 0 && len(withdrawn) == 0}, loaded
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

// Limits of load_skills.
const (
	maxLoadNames      = 16 // names one call may load
	maxSearchResults  = 5  // skills one query loads
	maxSearchRunes    = 200
	maxAreas          = 8  // areas the index of areas lists
	maxAreaWords      = 12 // objects named per area
	maxAreaWordRunes  = 6
	areaOther         = "other"
	areaNameSeparator = "_"
)

// searchSkills are the skills of the index that best match query, with
// the user's request as context, at most maxSearchResults, none already
// offered or withdrawn. Empty query: none.
func (r *run) searchSkills(query string) []string {
	query = cutRunes(strings.TrimSpace(query), maxSearchRunes)
	if query == "" || !r.indexOn {
		return nil
	}
	specs, m := r.catalog()
	if m == nil {
		return nil
	}
	scores := contextScores(newScoreMemo(m), query, r.goalText(), clauseContext)
	var out []string
	for _, i := range byScore(scores) {
		name := specs[i].Name
		if scores[i] < minScore || len(out) >= maxSearchResults {
			break
		}
		if r.byName[name] == nil && !r.withdrawn[name] {
			out = append(out, name)
		}
	}
	return out
}

// areaIndex is the index of a catalog too large to list: its areas (the
// part of a skill's name before the first underscore: hr, it, fin …),
// each with how many skills it has and the objects most of them are
// about, and how to find one. Its cost depends on the number of areas,
// not of skills.
func areaIndex(specs []skills.Spec, offered int) string {
	byArea := map[string][]skills.Spec{}
	for _, s := range specs {
		a := areaOther
		if i := strings.Index(s.Name, areaNameSeparator); i > 0 {
			a = strings.ToLower(s.Name[:i])
		}
		byArea[a] = append(byArea[a], s)
	}
	areas := make([]string, 0, len(byArea))
	for a := range byArea {
		areas = append(areas, a)
	}
	slices.SortFunc(areas, func(x, y string) int {
		return cmp.Or(len(byArea[y])-len(byArea[x]), strings.Compare(x, y))
	})
	if len(areas) > maxAreas {
		for _, a := range areas[maxAreas-1:] {
			if a != areaOther {
				byArea[areaOther] = append(byArea[areaOther], byArea[a]...)
			}
		}
		areas = append(slices.DeleteFunc(areas[:maxAreas-1], func(a string) bool { return a == areaOther }), areaOther)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<SKILL_INDEX>\nYou have %d skills; %d are in your tools. The others, by area, with what they are about. "+
		"Load the ones you need with load_skills {\"query\": \"<the user's words>\"}.", len(specs), offered)
	for _, a := range areas {
		fmt.Fprintf(&b, "\n- %s (%d): %s", a, len(byArea[a]), strings.Join(areaObjects(byArea[a]), ", "))
	}
	b.WriteString("\n</SKILL_INDEX>")
	return b.String()
}

// areaObjects are the objects an area's skills are about: the display
// names grouped by their first two characters (「假期余额」, 「假期申请」 →
// 「假期」), the largest groups first, each named by what its names share.
func areaObjects(specs []skills.Spec) []string {
	groups := map[string][]string{}
	var keys []string
	for _, s := range specs {
		name := []rune(indexLine(s))
		if len(name) == 0 {
			continue
		}
		key := string(name[:min(2, len(name))])
		if groups[key] == nil {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], string(name))
	}
	slices.SortStableFunc(keys, func(x, y string) int { return len(groups[y]) - len(groups[x]) })
	var out []string
	for _, k := range keys[:min(len(keys), maxAreaWords)] {
		out = append(out, cutRunes(commonPrefix(groups[k]), maxAreaWordRunes))
	}
	return out
}

// commonPrefix is the longest prefix, in runes, of all of names.
func commonPrefix(names []string) string {
	p := []rune(names[0])
	for _, n := range names[1:] {
		r := []rune(n)
		k := 0
		for k < len(p) && k < len(r) && p[k] == r[k] {
			k++
		}
		p = p[:k]
	}
	return string(p)
}
