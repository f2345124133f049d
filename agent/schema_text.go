package agent

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Models follow "status: one of open, closed" better than the same rule
// buried in a JSON Schema (seed 000, "schema-aware sampling"). The schema
// already travels in the tools block, and repeating it in every description
// cost more than the tools themselves, so the plain-language constraints are
// said only when they are needed: with the error when arguments fail
// validation (toolcall.go).
//
// Rendering and compiling are pure functions of the schema's bytes, and a
// process sees few distinct schemas (one per skill), so both are cached
// for the life of the process, keyed by the SHA-256 of the schema.
var (
	constraintCache sync.Map // [32]byte → string
	resolvedCache   sync.Map // [32]byte → resolvedEntry
)

type resolvedEntry struct {
	rs  *jsonschema.Resolved
	err error
}

// schemaConstraints returns the plain-language constraints of a parameter
// schema, "" when it has none worth saying.
func schemaConstraints(schema []byte) string {
	key := sha256.Sum256(schema)
	if v, ok := constraintCache.Load(key); ok {
		return v.(string)
	}
	text := renderConstraints(schema)
	constraintCache.Store(key, text)
	return text
}

// compiledSchema returns the schema compiled for validation, cached.
func compiledSchema(schema []byte) (*jsonschema.Resolved, error) {
	key := sha256.Sum256(schema)
	if v, ok := resolvedCache.Load(key); ok {
		e := v.(resolvedEntry)
		return e.rs, e.err
	}
	var s jsonschema.Schema
	e := resolvedEntry{}
	if e.err = json.Unmarshal(schema, &s); e.err == nil {
		e.rs, e.err = s.Resolve(nil)
	}
	resolvedCache.Store(key, e)
	return e.rs, e.err
}

func renderConstraints(schema []byte) string {
	root, err := parseJSON(schema)
	if err != nil || root.kind != jObject {
		return ""
	}
	props := root.get("properties")
	if props == nil || len(props.keys) == 0 {
		return "Arguments: none; call it with {}."
	}
	required := map[string]bool{}
	if req := root.get("required"); req != nil {
		for _, v := range req.vals {
			required[v.text] = true
		}
	}
	var b strings.Builder
	b.WriteString("Arguments:")
	for i, name := range props.keys {
		p := props.vals[i]
		fmt.Fprintf(&b, "\n- %s (%s", name, typeText(p))
		if required[name] {
			b.WriteString(", required")
		}
		b.WriteString(")")
		if rules := propertyRules(p); len(rules) > 0 {
			b.WriteString(": " + strings.Join(rules, "; "))
		}
	}
	if ap := root.get("additionalProperties"); ap != nil && ap.kind == jBool && ap.text == "false" {
		b.WriteString("\nNo other arguments are accepted.")
	}
	return b.String()
}

func typeText(p *jnode) string {
	t := p.get("type")
	switch {
	case t == nil:
		return "any type"
	case t.kind == jArray:
		var names []string
		for _, v := range t.vals {
			names = append(names, v.text)
		}
		return strings.Join(names, " or ")
	case t.text == "array":
		if items := p.get("items"); items != nil && items.get("type") != nil {
			return "array of " + typeText(items)
		}
	}
	return t.text
}

// ruleTexts say one keyword each, in the order they are checked.
var ruleTexts = []struct {
	key    string
	render func(v *jnode) string
}{
	{"const", func(v *jnode) string { return "must be exactly " + string(v.marshal()) }},
	{"enum", func(v *jnode) string { return "one of " + joinValues(v) }},
	{"pattern", func(v *jnode) string { return "must match the regular expression " + v.text }},
	{"format", func(v *jnode) string { return "format " + v.text + formatExample(v.text) }},
	{"minLength", func(v *jnode) string { return "at least " + v.text + " characters" }},
	{"maxLength", func(v *jnode) string { return "at most " + v.text + " characters" }},
	{"minimum", func(v *jnode) string { return "at least " + v.text }},
	{"exclusiveMinimum", func(v *jnode) string { return "greater than " + v.text }},
	{"maximum", func(v *jnode) string { return "at most " + v.text }},
	{"exclusiveMaximum", func(v *jnode) string { return "less than " + v.text }},
	{"multipleOf", func(v *jnode) string { return "a multiple of " + v.text }},
	{"minItems", func(v *jnode) string { return "at least " + v.text + " items" }},
	{"maxItems", func(v *jnode) string { return "at most " + v.text + " items" }},
	{"uniqueItems", func(v *jnode) string {
		if v.text == "true" {
			return "no duplicates"
		}
		return ""
	}},
	{"default", func(v *jnode) string { return "default " + string(v.marshal()) }},
}

func propertyRules(p *jnode) []string {
	var rules []string
	if p.get("minimum") != nil && p.get("maximum") != nil {
		rules = append(rules, fmt.Sprintf("between %s and %s", p.get("minimum").text, p.get("maximum").text))
	}
	for _, rt := range ruleTexts {
		v := p.get(rt.key)
		if v == nil || (p.get("minimum") != nil && p.get("maximum") != nil && (rt.key == "minimum" || rt.key == "maximum")) {
			continue
		}
		if s := rt.render(v); s != "" {
			rules = append(rules, s)
		}
	}
	if items := p.get("items"); items != nil {
		if e := items.get("enum"); e != nil {
			rules = append(rules, "each item one of "+joinValues(e))
		}
	}
	if sub := p.get("properties"); sub != nil && len(sub.keys) > 0 {
		rules = append(rules, "an object with fields "+strings.Join(sub.keys, ", "))
	}
	return rules
}

func joinValues(v *jnode) string {
	var out []string
	for _, x := range v.vals {
		out = append(out, string(x.marshal()))
	}
	return strings.Join(out, ", ")
}

func formatExample(format string) string {
	switch format {
	case "date":
		return " (e.g. 2026-03-01)"
	case "date-time":
		return " (e.g. 2026-03-01T09:00:00+08:00)"
	case "email":
		return " (e.g. zhangsan@example.com)"
	}
	return ""
}
