package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/skills"
)

// Offering: a model shown fewer, relevant tools picks the right one more
// often, cannot wander into unrelated ones (seed 002 §2.2) and costs less.
// But a skill that is not on offer cannot answer, so offering must never
// hide the skill the user needs: when in doubt, offer more.
//
// Turn.Tools are the skills the user may use (access rules applied by the
// gateway); only they are ever offered. Each is scored against the user's
// text (match.go). Offered in full (its definition in the tools block):
//
//  1. skills with Triggers.Always, and skills bound to the chat
//     (Turn.BoundTools);
//  2. the best matches of the text: every skill scoring at least
//     relativeShare of the best score (and minScore), and the best skill of
//     each clause of the text, so a two-part request gets both skills;
//  3. the skills of the previous turn: Turn.RecentTools, and the best
//     matches of the user's previous message, so 「那上个月呢」 keeps the
//     payslip skill on offer;
//
// at most Options.MaxTools of them, in that order of priority.
//
// When the best score is weak (below strongScore), a small catalog (at most
// MaxTools skills) is offered whole. A larger one, or one with more matches
// than MaxTools, gets the compact skill
// index: one line per skill the user may use, in the system prompt, and the
// built-in load_skills tool that loads full definitions (a skill named in
// the index may also be called directly). The index is also shown when the
// match is strong, as long as it costs at most Options.IndexTokens, since a
// strong match can still be the wrong one.
//
// Offered skills are listed in the order of Turn.Tools (the registry sorts
// by name), and the index lists every skill, so the same user gets a
// byte-identical system prompt turn after turn.

// Score thresholds, on the scale of match.go: a term only one skill has
// found in its declared words scores 3, in its prose 1.
const (
	minScore      = 0.8 // below this a skill is not a match at all
	strongScore   = 2.4 // the best match is trusted without the whole catalog
	relativeShare = 0.4 // matches this close to the best are offered too
	// maxPrevious caps the previous turn's skills kept on offer.
	maxPrevious = 3
)

// toolEntry is an offered skill with what the run needs of it, built once.
type toolEntry struct {
	tool   skills.Tool
	spec   skills.Spec
	params json.RawMessage      // the parameter schema sent to the model
	schema *jsonschema.Resolved // nil when the schema does not compile: the skill validates anyway
	def    openai.Tool
}

var regexCache sync.Map // pattern → *regexp.Regexp, nil for an invalid one

func compiledRegex(p string) *regexp.Regexp {
	if v, ok := regexCache.Load(p); ok {
		return v.(*regexp.Regexp)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		re = nil // the skill loader reports it; here it just never matches
	}
	regexCache.Store(p, re)
	return re
}

// offerInput is what offering looks at.
type offerInput struct {
	tools    []skills.Tool
	bound    []string // Turn.BoundTools
	recent   []string // Turn.RecentTools
	text     string   // the user's text, normalised
	previous string   // the user's previous message, "" when none
	limit    int      // Options.MaxTools
	indexTok int      // Options.IndexTokens
}

// offering is the outcome: the skills offered in full and whether the
// index is on.
type offering struct {
	entries []*toolEntry
	index   bool
}

// offerTools picks what to offer. Errors: two tools with the same name, or
// a tool with a built-in's name.
func offerTools(in offerInput) (offering, error) {
	specs := make([]skills.Spec, len(in.tools))
	pos := map[string]int{}
	for i, t := range in.tools {
		specs[i] = t.Spec()
		name := specs[i].Name
		if _, dup := pos[name]; dup {
			return offering{}, fmt.Errorf("two tools named %q", name)
		}
		if isBuiltin(name) {
			return offering{}, fmt.Errorf("tool name %q is reserved for the agent", name)
		}
		pos[name] = i
	}
	m := newMatcher(specs)
	var picked []int
	add := func(i int) {
		if !slices.Contains(picked, i) {
			picked = append(picked, i)
		}
	}
	for i, s := range specs {
		if s.Triggers.Always || slices.Contains(in.bound, s.Name) {
			add(i)
		}
	}
	current, best := bestMatches(m, in.text)
	for _, i := range current {
		add(i)
	}
	var previous []int
	for _, name := range in.recent {
		if i, ok := pos[name]; ok {
			previous = append(previous, i)
		}
	}
	if in.previous != "" {
		prev, _ := bestMatches(m, in.previous)
		previous = append(previous, prev...)
	}
	for _, i := range previous[:min(len(previous), maxPrevious)] {
		add(i)
	}

	strong := best >= strongScore
	if !strong && len(specs) <= in.limit {
		picked = picked[:0]
		for i := range specs {
			picked = append(picked, i)
		}
	}
	// Matches beyond the cap are doubt too: the one needed may be among them.
	capped := len(picked) > in.limit
	picked = picked[:min(len(picked), in.limit)]
	slices.Sort(picked)
	out := offering{entries: make([]*toolEntry, 0, len(picked))}
	for _, i := range picked {
		out.entries = append(out.entries, newToolEntry(in.tools[i], specs[i]))
	}
	if len(picked) < len(specs) {
		out.index = !strong || capped || countTokens(skillIndex(specs)) <= in.indexTok
	}
	return out, nil
}

// bestMatches ranks the skills for text: those within relativeShare of the
// best score, then the best of each clause, each at least minScore. best
// is the top score.
func bestMatches(m *matcher, text string) (ranked []int, best float64) {
	scores := m.score(text)
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	if len(order) == 0 {
		return nil, 0
	}
	best = scores[order[0]]
	for _, i := range order {
		if scores[i] < minScore || scores[i] < relativeShare*best {
			break
		}
		ranked = append(ranked, i)
	}
	if parts := clauses(text); len(parts) > 1 {
		for _, part := range parts {
			s := m.score(part)
			top := 0
			for i := range s {
				if s[i] > s[top] {
					top = i
				}
			}
			if s[top] >= minScore && !slices.Contains(ranked, top) {
				ranked = append(ranked, top)
			}
		}
	}
	return ranked, best
}

// noParameters is the schema of a tool that takes no arguments; models
// expect an object schema even then.
var noParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// newToolEntry builds the tool definition. The description says what the
// schema cannot: when to use the skill, and whether it asks the user first
// or answers later. The arguments are the schema's job alone.
func newToolEntry(t skills.Tool, spec skills.Spec) *toolEntry {
	params := spec.Parameters
	if len(params) == 0 {
		params = noParameters
	}
	e := &toolEntry{tool: t, spec: spec, params: params}
	e.schema, _ = compiledSchema(params)
	desc := strings.TrimSpace(spec.Description)
	if spec.Confirm {
		desc += "\nIt asks the user to confirm before anything happens."
	}
	if spec.Async {
		desc += "\nIt usually runs in the background; the result is sent to the chat later."
	}
	e.def = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: spec.Name, Description: desc, Parameters: params,
	}}
	return e
}

// toolsByName returns the entries of names that are in tools, for resuming
// a task with the tools it was offered.
func toolsByName(tools []skills.Tool, names []string) []*toolEntry {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []*toolEntry
	for _, t := range tools {
		if spec := t.Spec(); want[spec.Name] && !isBuiltin(spec.Name) {
			out = append(out, newToolEntry(t, spec))
			delete(want, spec.Name) // a duplicate name keeps the first
		}
	}
	return out
}
