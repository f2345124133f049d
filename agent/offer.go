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
	"golang.org/x/text/unicode/norm"

	"github.com/hermes-gw/hermes/skills"
)

// Offering: a model shown fewer, relevant tools picks the right one more
// often and cannot wander into unrelated ones (seed 002 §2.2). A skill is
// offered on a turn when, in this order of priority:
//
//  1. its Triggers.Always is set;
//  2. the chat is bound to it (Turn.BoundTools);
//  3. a trigger matches: an IntentContains substring (case-insensitive) or
//     an IntentRegex occurs in the user's text or in the user's previous
//     message (so "那病假呢？" after a leave question still finds the
//     leave skills);
//  4. it declares no triggers at all: skills written before triggers
//     existed stay available.
//
// At most Options.MaxTools are offered, the higher priorities first; they
// are listed in the order of Turn.Tools (the registry sorts by name), so
// the same set gives byte-identical requests.

// Why a tool was offered, in priority order.
const (
	offerAlways = iota
	offerBound
	offerTrigger
	offerNoTriggers
	offerNot
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

// offerReason says why spec is relevant to texts, or offerNot.
func offerReason(spec skills.Spec, bound map[string]bool, texts []string) int {
	t := spec.Triggers
	switch {
	case t.Always:
		return offerAlways
	case bound[spec.Name]:
		return offerBound
	case len(t.IntentContains) == 0 && len(t.IntentRegex) == 0:
		return offerNoTriggers
	}
	for _, text := range texts {
		lower := strings.ToLower(text)
		for _, sub := range t.IntentContains {
			if sub != "" && strings.Contains(lower, strings.ToLower(norm.NFC.String(sub))) {
				return offerTrigger
			}
		}
		for _, p := range t.IntentRegex {
			if re := compiledRegex(p); re != nil && re.MatchString(text) {
				return offerTrigger
			}
		}
	}
	return offerNot
}

// offerTools picks the tools to offer for texts and builds their entries.
// Errors: two tools with the same name.
func offerTools(tools []skills.Tool, boundNames []string, texts []string, limit int) ([]*toolEntry, error) {
	bound := map[string]bool{}
	for _, n := range boundNames {
		bound[n] = true
	}
	type candidate struct {
		pos, reason int
		tool        skills.Tool
		spec        skills.Spec
	}
	seen := map[string]bool{}
	var cands []candidate
	for i, t := range tools {
		spec := t.Spec()
		if seen[spec.Name] {
			return nil, fmt.Errorf("two tools named %q", spec.Name)
		}
		seen[spec.Name] = true
		if isBuiltin(spec.Name) {
			return nil, fmt.Errorf("tool name %q is reserved for the agent", spec.Name)
		}
		if reason := offerReason(spec, bound, texts); reason != offerNot {
			cands = append(cands, candidate{pos: i, reason: reason, tool: t, spec: spec})
		}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(a.reason, b.reason) })
	cands = cands[:min(len(cands), limit)]
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(a.pos, b.pos) })

	out := make([]*toolEntry, 0, len(cands))
	for _, c := range cands {
		out = append(out, newToolEntry(c.tool, c.spec))
	}
	return out, nil
}

// noParameters is the schema of a tool that takes no arguments; models
// expect an object schema even then.
var noParameters = json.RawMessage(`{"type":"object","properties":{}}`)

func newToolEntry(t skills.Tool, spec skills.Spec) *toolEntry {
	params := spec.Parameters
	if len(params) == 0 {
		params = noParameters
	}
	e := &toolEntry{tool: t, spec: spec, params: params}
	e.schema, _ = compiledSchema(params)
	desc := spec.Description
	if c := schemaConstraints(params); c != "" {
		desc += "\n\n" + c
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
