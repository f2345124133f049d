package skills

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// GeneratedSkill is one skill made from an OpenAPI operation.
type GeneratedSkill struct {
	Name    string // skill name, from the operationId
	Dir     string // directory to write SKILL.md into (the name)
	SKILLMD []byte // the definition; it passes Parse
}

// openAPIMethods are the operations imported, in output order per path.
var openAPIMethods = []string{"get", "post", "put", "patch", "delete"}

// ImportOpenAPI turns the operations of an OpenAPI 3 document (JSON or YAML)
// into skill definitions: operationId → name in snake_case,
// summary/description → description, path and query parameters plus a JSON
// (or form) request body's properties → parameters (local $refs to
// components resolved), servers[0] → endpoint base. Write operations get
// confirm: true. The definitions are a start: review when-to-use texts,
// auth and identity before use (`hermes skills check` warns).
//
// Errors: the document is not OpenAPI 3, or an operation cannot become a
// valid skill (naming the operation).
func ImportOpenAPI(spec []byte) ([]GeneratedSkill, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("skills: import openapi: not JSON or YAML: %w", err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.") {
		return nil, errors.New(`skills: import openapi: not an OpenAPI 3 document (no "openapi: 3.x")`)
	}
	im := &importer{doc: doc, base: serverBase(doc), seen: map[string]bool{}}
	paths, _ := doc["paths"].(map[string]any)
	var out []GeneratedSkill
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		item, _ := im.deref(paths[path]).(map[string]any)
		for _, method := range openAPIMethods {
			op, ok := im.deref(item[method]).(map[string]any)
			if !ok {
				continue
			}
			g, err := im.operation(path, method, item, op)
			if err != nil {
				return nil, fmt.Errorf("skills: import openapi: %s %s: %w", strings.ToUpper(method), path, err)
			}
			out = append(out, g)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("skills: import openapi: no operations under paths")
	}
	slices.SortFunc(out, func(a, b GeneratedSkill) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

type importer struct {
	doc  map[string]any
	base string
	seen map[string]bool // names used so far
}

// keyEnv names the identity key of the imported API: one key per backend,
// named after its title (Petstore → PETSTORE_HMAC_KEY).
func (im *importer) keyEnv() string {
	info, _ := im.doc["info"].(map[string]any)
	title, _ := info["title"].(string)
	name := strings.Trim(nonWordRE.ReplaceAllString(strings.ToLower(title), "_"), "_")
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = "api_" + name
	}
	return strings.ToUpper(strings.TrimSuffix(name, "_")) + "_HMAC_KEY"
}

// serverBase is servers[0].url with its variables at their defaults,
// without a trailing slash; "" when there is none.
func serverBase(doc map[string]any) string {
	servers, _ := doc["servers"].([]any)
	if len(servers) == 0 {
		return ""
	}
	s, _ := servers[0].(map[string]any)
	u, _ := s["url"].(string)
	vars, _ := s["variables"].(map[string]any)
	for name, v := range vars {
		def, _ := v.(map[string]any)["default"].(string)
		u = strings.ReplaceAll(u, "{"+name+"}", def)
	}
	return strings.TrimSuffix(u, "/")
}

// front is a generated SKILL.md front matter, in reading order.
type front struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Parameters  map[string]any    `yaml:"parameters"`
	Endpoint    string            `yaml:"endpoint"`
	Method      string            `yaml:"method"`
	ContentType string            `yaml:"content_type,omitempty"`
	QueryParams []string          `yaml:"query_params,omitempty"`
	Timeout     string            `yaml:"timeout"`
	Confirm     bool              `yaml:"confirm,omitempty"`
	Identity    map[string]string `yaml:"identity"`
}

func (im *importer) operation(path, method string, item, op map[string]any) (GeneratedSkill, error) {
	name := im.name(op, method, path)
	f := front{Name: name, Endpoint: im.base + path, Method: strings.ToUpper(method), Timeout: DefaultTimeout.String(),
		Confirm: method != "get", Identity: map[string]string{"hmac_key_env": im.keyEnv()}}
	summary, _ := op["summary"].(string)
	desc, _ := op["description"].(string)
	f.Description = strings.TrimSpace(strings.TrimSpace(summary) + "\n" + strings.TrimSpace(desc))
	if f.Description == "" {
		f.Description = fmt.Sprintf("Calls %s %s.", f.Method, path)
	}

	props, required := map[string]any{}, []string{}
	var notes []string
	for _, p := range im.parameters(item, op) {
		pname, _ := p["name"].(string)
		in, _ := p["in"].(string)
		if in != "path" && in != "query" {
			notes = append(notes, fmt.Sprintf("%s parameter %q is not imported (only path and query are).", in, pname))
			continue
		}
		schema := im.clean(p["schema"], 0)
		if d, ok := p["description"].(string); ok && d != "" {
			schema["description"] = d
		}
		props[pname] = schema
		if r, _ := p["required"].(bool); r || in == "path" {
			required = append(required, pname)
		}
		if in == "query" && methodHasBody[f.Method] {
			f.QueryParams = append(f.QueryParams, pname)
		}
	}
	if body, ok := im.deref(op["requestBody"]).(map[string]any); ok && methodHasBody[f.Method] {
		contentType, schema := im.bodySchema(body)
		if contentType != ContentJSON {
			f.ContentType = contentType
		}
		bodyProps, _ := schema["properties"].(map[string]any)
		for _, pname := range slices.Sorted(maps.Keys(bodyProps)) {
			if _, clash := props[pname]; clash {
				notes = append(notes, fmt.Sprintf("body property %q is not imported: a parameter has the same name.", pname))
				continue
			}
			props[pname] = bodyProps[pname]
		}
		if req, ok := schema["required"].([]any); ok && body["required"] != false {
			for _, r := range req {
				if s, ok := r.(string); ok && bodyProps[s] != nil && !slices.Contains(required, s) {
					required = append(required, s)
				}
			}
		}
	}
	f.Parameters = map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		f.Parameters["required"] = required
	}

	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return GeneratedSkill{}, err
	}
	opID, _ := op["operationId"].(string)
	fmt.Fprintf(&b, "---\nImported from OpenAPI operation %q (%s %s).\n", opID, f.Method, path)
	b.WriteString("Review before use: say when to use it and when not to, set auth and identity, and decide on confirm.\n")
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	if _, err := Parse(name+"/"+DefinitionFile, b.Bytes()); err != nil {
		return GeneratedSkill{}, err
	}
	return GeneratedSkill{Name: name, Dir: name, SKILLMD: b.Bytes()}, nil
}

var nonWordRE = regexp.MustCompile(`[^a-z0-9]+`)

// name makes a unique skill name: operationId in snake_case, else the
// method and path.
func (im *importer) name(op map[string]any, method, path string) string {
	base, _ := op["operationId"].(string)
	if base == "" {
		base = method + "_" + path
	}
	name := strings.Trim(nonWordRE.ReplaceAllString(snakeCase(base), "_"), "_")
	if name == "" || !unicode.IsLetter(rune(name[0])) {
		name = "op_" + name
	}
	name = truncateUTF8(name, 60)
	unique := name
	for i := 2; im.seen[unique]; i++ {
		unique = fmt.Sprintf("%s_%d", name, i)
	}
	im.seen[unique] = true
	return unique
}

// snakeCase turns "getPetById" or "HTTPStatus" into "get_pet_by_id",
// "http_status".
func snakeCase(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) {
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])
			if prevLower || nextLower {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// parameters merges path-level and operation-level parameters; the
// operation's win (same name and location).
func (im *importer) parameters(item, op map[string]any) []map[string]any {
	var out []map[string]any
	index := map[string]int{}
	for _, list := range []any{item["parameters"], op["parameters"]} {
		ps, _ := list.([]any)
		for _, raw := range ps {
			p, ok := im.deref(raw).(map[string]any)
			if !ok {
				continue
			}
			key := fmt.Sprint(p["in"], "/", p["name"])
			if i, dup := index[key]; dup {
				out[i] = p
				continue
			}
			index[key] = len(out)
			out = append(out, p)
		}
	}
	return out
}

// bodySchema picks the request body's JSON schema, else a form's.
func (im *importer) bodySchema(body map[string]any) (string, map[string]any) {
	content, _ := body["content"].(map[string]any)
	for _, ct := range []string{ContentJSON, ContentForm, ContentMultipart} {
		if media, ok := content[ct].(map[string]any); ok {
			return ct, im.clean(media["schema"], 0)
		}
	}
	return ContentJSON, map[string]any{}
}

// maxSchemaDepth stops recursive schemas (a tree of categories); deeper
// levels become a plain object.
const maxSchemaDepth = 8

// schemaKeywords are the JSON Schema keywords kept; OpenAPI extras
// (example, xml, discriminator, x-...) are dropped because the argument
// validator refuses unknown keywords.
var schemaKeywords = []string{"type", "description", "enum", "const", "default", "format", "title",
	"minimum", "maximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
	"multipleOf", "additionalProperties"}

// clean resolves $refs and keeps only JSON Schema keywords, turning
// OpenAPI 3.0's nullable and example into their JSON Schema forms.
func (im *importer) clean(raw any, depth int) map[string]any {
	return im.cleanRefs(raw, depth, nil)
}

// cleanRefs is clean with the chain of $refs being expanded: a schema
// that refers to itself (an owner's friends are owners) is cut at the
// first repetition rather than unrolled to maxSchemaDepth.
func (im *importer) cleanRefs(raw any, depth int, chain []string) map[string]any {
	if m, ok := raw.(map[string]any); ok {
		if ref, ok := m["$ref"].(string); ok {
			if slices.Contains(chain, ref) {
				return map[string]any{"type": "object", "description": "(recursive: same shape as above)"}
			}
			chain = append(slices.Clip(chain), ref)
		}
	}
	in, ok := im.deref(raw).(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return map[string]any{"type": "object"}
	}
	out := map[string]any{}
	for _, k := range schemaKeywords {
		if v, ok := in[k]; ok {
			out[k] = v
		}
	}
	if ap, ok := in["additionalProperties"].(map[string]any); ok {
		out["additionalProperties"] = im.cleanRefs(ap, depth+1, chain)
	}
	for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
		if v, ok := in[k]; ok {
			if _, isBool := v.(bool); !isBool { // 3.0's boolean form has no JSON Schema meaning alone
				out[k] = v
			}
		}
	}
	if ex, ok := in["example"]; ok {
		out["examples"] = []any{ex}
	}
	if n, _ := in["nullable"].(bool); n {
		if t, ok := out["type"].(string); ok {
			out["type"] = []any{t, "null"}
		}
	}
	if items, ok := in["items"]; ok {
		out["items"] = im.cleanRefs(items, depth+1, chain)
	}
	if props, ok := in["properties"].(map[string]any); ok {
		cleaned := map[string]any{}
		for name, p := range props {
			if pm, ok := im.deref(p).(map[string]any); ok && pm["readOnly"] == true {
				continue // the server sets it; the model must not
			}
			cleaned[name] = im.cleanRefs(p, depth+1, chain)
		}
		out["properties"] = cleaned
		if req, ok := in["required"].([]any); ok {
			var kept []any
			for _, r := range req {
				if s, ok := r.(string); ok && cleaned[s] != nil {
					kept = append(kept, s)
				}
			}
			if len(kept) > 0 {
				out["required"] = kept
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := in[k].([]any); ok {
			var subs []any
			for _, sub := range list {
				subs = append(subs, im.cleanRefs(sub, depth+1, chain))
			}
			out[k] = subs
		}
	}
	if _, ok := out["type"]; !ok && out["properties"] != nil {
		out["type"] = "object"
	}
	return out
}

// deref follows a local "$ref": "#/components/..." (repeatedly); anything
// else is returned as is. A dangling or remote ref becomes nil.
func (im *importer) deref(v any) any {
	for range maxSchemaDepth {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		if !strings.HasPrefix(ref, "#/") {
			return nil
		}
		var cur any = im.doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
			obj, _ := cur.(map[string]any)
			cur = obj[part]
		}
		v = cur
	}
	return nil
}
