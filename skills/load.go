package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DefinitionFile is the file that defines a skill inside its directory.
const DefinitionFile = "SKILL.md"

// LoadError is one problem in one skill definition. Callers that loaded from
// os.DirFS(dir) may prefix File with dir for their own messages.
type LoadError struct {
	File  string // path inside the loaded fs.FS, e.g. "hr_leave/SKILL.md"
	Line  int    // 1-based line in the file, 0 when unknown
	Field string // front matter field, dotted for nested ones ("auth.token_env"); empty for the file itself
	Err   error
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *LoadError) Unwrap() error { return e.Err }

// LoadDir loads every */SKILL.md of fsys, in path order.
//
// It returns every valid skill and, when any definition is broken or two
// share a name, an error joining one *LoadError per problem (errors.As finds
// the first). Callers decide whether a broken skill stops the start; `hermes
// skills check` prints them all. Environment variables named by a skill are
// not read here (see Registry.CheckEnv).
func LoadDir(fsys fs.FS) ([]*Skill, error) {
	files, err := fs.Glob(fsys, "*/"+DefinitionFile)
	if err != nil {
		return nil, fmt.Errorf("skills: load: %w", err)
	}
	var (
		out  []*Skill
		errs []error
		seen = map[string]string{} // name → file
	)
	for _, file := range files {
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			errs = append(errs, &LoadError{File: file, Err: err})
			continue
		}
		s, err := Parse(file, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := seen[s.Name]; dup {
			errs = append(errs, &LoadError{File: file, Field: "name",
				Err: fmt.Errorf("duplicate skill name %q, already defined in %s", s.Name, prev)})
			continue
		}
		seen[s.Name] = file
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// Parse reads one SKILL.md: YAML front matter between "---" lines, then a
// Markdown body with usage notes. file is only used in errors and Skill.File.
// Errors are *LoadError naming the field at fault.
func Parse(file string, data []byte) (*Skill, error) {
	front, body, err := splitFrontMatter(data)
	if err != nil {
		return nil, &LoadError{File: file, Err: err}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		return nil, &LoadError{File: file, Err: fmt.Errorf("front matter is not valid YAML: %w", err)}
	}
	if len(doc.Content) == 0 {
		return nil, &LoadError{File: file, Err: errors.New("front matter is empty")}
	}
	s := &Skill{File: file, Usage: body}
	lines := map[string]int{}
	if err := decodeMapping(s, doc.Content[0], skillFields, "", lines); err != nil {
		return nil, asLoadError(file, err, lines)
	}
	if err := s.normalize(); err != nil {
		return nil, asLoadError(file, err, lines)
	}
	return s, nil
}

// splitFrontMatter cuts a SKILL.md into front matter and trimmed body.
func splitFrontMatter(data []byte) (front []byte, body string, err error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // editors on Windows add a BOM
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return nil, "", errors.New(`must start with a "---" line opening the YAML front matter`)
	}
	// The opening line is line 1, so YAML line n is file line n+1; fieldError
	// lines are shifted by frontMatterOffset below.
	var fm strings.Builder
	for {
		line, after, found := strings.Cut(rest, "\n")
		if strings.TrimRight(line, " \t") == "---" {
			return []byte(fm.String()), strings.TrimSpace(after), nil
		}
		if !found {
			return nil, "", errors.New(`front matter is not closed by a "---" line`)
		}
		fm.WriteString(line)
		fm.WriteByte('\n')
		rest = after
	}
}

// frontMatterOffset turns a YAML line into a file line (the opening "---").
const frontMatterOffset = 1

// fieldError is a problem with one (possibly nested) front matter field.
type fieldError struct {
	field string
	line  int // YAML line, 0 when unknown
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }

func asLoadError(file string, err error, lines map[string]int) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		return &LoadError{File: file, Err: err}
	}
	line := fe.line
	if line == 0 {
		line = lines[fe.field]
	}
	if line > 0 {
		line += frontMatterOffset
	}
	return &LoadError{File: file, Line: line, Field: fe.field, Err: fe.err}
}

// A fieldDecoder moves one YAML value into the destination. It only checks
// the value's shape; meaning is checked by Skill.normalize so that skills
// built in code get the same checks. lines collects the YAML line of every
// dotted field name for those later checks.
type fieldDecoder[T any] func(dst T, n *yaml.Node, lines map[string]int) error

// skillFields are the front matter fields. Anything else is an error:
// a typo such as "timout" must not silently fall back to a default.
var skillFields = map[string]fieldDecoder[*Skill]{
	"name":        stringField(func(s *Skill) *string { return &s.Name }),
	"description": stringField(func(s *Skill) *string { return &s.Description }),
	"parameters":  decodeParameters,
	"executor":    stringField(func(s *Skill) *string { return &s.Executor }),
	"endpoint":    stringField(func(s *Skill) *string { return &s.Endpoint }),
	"method":      stringField(func(s *Skill) *string { return &s.Method }),
	"timeout":     decodeTimeout,
	"auth": func(s *Skill, n *yaml.Node, lines map[string]int) error {
		s.Auth = &Auth{}
		return decodeMapping(s.Auth, n, authFields, "auth.", lines)
	},
	"identity": func(s *Skill, n *yaml.Node, lines map[string]int) error {
		return decodeMapping(&s.Identity, n, identityFields, "identity.", lines)
	},
}

var authFields = map[string]fieldDecoder[*Auth]{
	"type":      stringField(func(a *Auth) *string { return &a.Type }),
	"token_env": stringField(func(a *Auth) *string { return &a.TokenEnv }),
}

var identityFields = map[string]fieldDecoder[*IdentityConfig]{
	"hmac_key_env": stringField(func(c *IdentityConfig) *string { return &c.HMACKeyEnv }),
}

// decodeMapping decodes a YAML mapping field by field.
func decodeMapping[T any](dst T, n *yaml.Node, fields map[string]fieldDecoder[T], prefix string, lines map[string]int) error {
	if n.Kind != yaml.MappingNode {
		return &fieldError{field: strings.TrimSuffix(prefix, "."), line: n.Line, err: errors.New("must be a mapping")}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		name := prefix + key.Value
		lines[name] = key.Line
		decode, ok := fields[key.Value]
		if !ok {
			known := slices.Sorted(maps.Keys(fields))
			return &fieldError{field: name, line: key.Line,
				err: fmt.Errorf("unknown field (known fields: %s)", strings.Join(known, ", "))}
		}
		if err := decode(dst, val, lines); err != nil {
			var fe *fieldError
			if errors.As(err, &fe) {
				return err // a nested mapping already named the field
			}
			return &fieldError{field: name, line: key.Line, err: err}
		}
	}
	return nil
}

func stringField[T any](field func(T) *string) fieldDecoder[T] {
	return func(dst T, n *yaml.Node, _ map[string]int) error { return decodeString(n, field(dst)) }
}

func decodeString(n *yaml.Node, dst *string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return errors.New("must be a string")
	}
	*dst = n.Value
	return nil
}

func decodeTimeout(s *Skill, n *yaml.Node, _ map[string]int) error {
	var text string
	if err := decodeString(n, &text); err != nil {
		return err
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("want a duration such as 10s or 1m30s: %w", err)
	}
	s.Timeout = d
	return nil
}

// decodeParameters turns the YAML schema into JSON. Maps are marshalled with
// sorted keys, so the schema the model sees is byte-stable between starts
// (prompt caches key on the exact bytes).
func decodeParameters(s *Skill, n *yaml.Node, _ map[string]int) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("must be a JSON Schema object: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("must be a JSON Schema object")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("must be a JSON Schema object: %w", err)
	}
	s.Parameters = raw
	return nil
}
