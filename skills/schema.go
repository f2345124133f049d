package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// ErrInvalidArguments is returned by Tool.Call when the model's arguments do
// not match the skill's parameters; the backend is not called.
var ErrInvalidArguments = errors.New("invalid arguments")

// compileParameters checks that raw is an object schema and compiles it for
// argument validation. It returns the compacted schema too.
func compileParameters(raw json.RawMessage) (*jsonschema.Resolved, json.RawMessage, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("must be a JSON Schema object: %w", err)
	}
	if s.Type != "object" {
		return nil, nil, fmt.Errorf("must be a JSON Schema object (type: object), got type %q", s.Type)
	}
	if err := checkKeywords(&s, "parameters"); err != nil {
		return nil, nil, err
	}
	for _, name := range s.Required {
		if _, ok := s.Properties[name]; !ok {
			return nil, nil, fmt.Errorf("required property %q is not in properties", name)
		}
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, nil, fmt.Errorf("must be a JSON Schema object: %w", err)
	}
	return resolved, compact.Bytes(), nil
}

// checkKeywords rejects keywords the library does not know (it keeps them in
// Extra): in a hand-written schema "require:" is a typo for "required:", and
// accepting it would silently drop the check.
func checkKeywords(s *jsonschema.Schema, at string) error {
	if s == nil {
		return nil
	}
	if len(s.Extra) > 0 {
		return fmt.Errorf("unknown JSON Schema keyword %q at %s", slices.Sorted(maps.Keys(s.Extra))[0], at)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		if err := checkKeywords(s.Properties[name], at+".properties."+name); err != nil {
			return err
		}
	}
	return checkKeywords(s.Items, at+".items")
}

// validateArgs checks the model's arguments against the skill's schema. An
// empty string counts as {}: some models send that for tools without
// parameters.
func (s *Skill) validateArgs(args json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, fmt.Errorf("skill %s: %w: not valid JSON: %v", s.Name, ErrInvalidArguments, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("skill %s: %w: want a JSON object", s.Name, ErrInvalidArguments)
	}
	if err := s.args.Validate(v); err != nil {
		return nil, fmt.Errorf("skill %s: %w: %v", s.Name, ErrInvalidArguments, err)
	}
	return args, nil
}
