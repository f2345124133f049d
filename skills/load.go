package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

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
// the first; a broken file may have several). Callers decide whether a
// broken skill stops the start (LoadRegistry refuses the whole set); `hermes
// skills check` prints them all. Secrets named by a skill are not read here
// (see Registry.CheckEnv).
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
			errs = append(errs, &LoadError{File: file, Line: s.line("name"), Field: "name",
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
// The error joins one *LoadError per problem, each naming the field at fault.
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
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &LoadError{File: file, Line: root.Line + frontMatterOffset, Err: errors.New("must be a mapping")}
	}
	s := &Skill{File: file, Usage: body, lines: map[string]int{}}
	decodeErr := decodeMapping(s, root, skillFields, "", s.lines)
	var fe *fieldError
	// Check meaning even when some fields failed to decode, so one run
	// reports everything; a field that failed to decode is not reported
	// twice ("must be a string", then "is required").
	failed := map[string]bool{}
	for _, e := range flatten(decodeErr) {
		if errors.As(e, &fe) {
			failed[fe.field] = true
		}
	}
	errs := flatten(decodeErr)
	for _, e := range flatten(s.normalize()) {
		if errors.As(e, &fe) && failed[fe.field] {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return nil, asLoadErrors(file, errors.Join(errs...), s.lines)
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

// frontMatterOffset turns a YAML line into a file line: the opening "---"
// is line 1, so YAML line n is file line n+1.
const frontMatterOffset = 1

// fieldError is a problem with one (possibly nested) front matter field.
type fieldError struct {
	field string
	line  int // YAML line, 0 when unknown
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }

// flatten lists the errors of an errors.Join tree (nil: none).
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// asLoadErrors turns each problem into a *LoadError with file and line.
func asLoadErrors(file string, err error, lines map[string]int) error {
	var out []error
	for _, e := range flatten(err) {
		out = append(out, asLoadError(file, e, lines))
	}
	return errors.Join(out...)
}

func asLoadError(file string, err error, lines map[string]int) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		return &LoadError{File: file, Err: err}
	}
	line := fe.line
	if line == 0 {
		line = lineOf(lines, fe.field)
	}
	if line > 0 {
		line += frontMatterOffset
	}
	return &LoadError{File: file, Line: line, Field: fe.field, Err: fe.err}
}

// lineOf finds the YAML line of a field, or of the nearest enclosing one
// ("command.argv[1]" → "command.argv" → "command").
func lineOf(lines map[string]int, field string) int {
	for field != "" {
		if l, ok := lines[field]; ok {
			return l
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			return 0
		}
		field = field[:i]
	}
	return 0
}

// line is the file line of a field of a parsed skill, 0 when unknown.
func (s *Skill) line(field string) int {
	if l := lineOf(s.lines, field); l > 0 {
		return l + frontMatterOffset
	}
	return 0
}

// A fieldDecoder moves one YAML value into the destination. It only checks
// the value's shape; meaning is checked by Skill.normalize so that skills
// built in code get the same checks. lines collects the YAML line of every
// dotted field name for those later checks.
type fieldDecoder[T any] func(dst T, n *yaml.Node, lines map[string]int) error

// decodeMapping decodes a YAML mapping field by field. Unknown fields are
// errors: a typo such as "timout" must not silently fall back to a default.
// It goes on after a bad field and returns every problem joined.
func decodeMapping[T any](dst T, n *yaml.Node, fields map[string]fieldDecoder[T], prefix string, lines map[string]int) error {
	if n.Kind != yaml.MappingNode {
		return &fieldError{field: strings.TrimSuffix(prefix, "."), line: n.Line, err: errors.New("must be a mapping")}
	}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		name := prefix + key.Value
		lines[name] = key.Line
		decode, ok := fields[key.Value]
		if !ok {
			known := slices.Sorted(maps.Keys(fields))
			errs = append(errs, &fieldError{field: name, line: key.Line,
				err: fmt.Errorf("unknown field (known fields: %s)", strings.Join(known, ", "))})
			continue
		}
		if err := decode(dst, val, lines); err != nil {
			var fe *fieldError
			if errors.As(err, &fe) {
				errs = append(errs, err) // a nested mapping already named the field
				continue
			}
			errs = append(errs, &fieldError{field: name, line: key.Line, err: err})
		}
	}
	return errors.Join(errs...)
}
