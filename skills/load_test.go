package skills_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

func TestLoadDir_Samples(t *testing.T) {
	defs, err := skills.LoadDir(skills.SamplesFS())
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	var names []string
	for _, s := range defs {
		names = append(names, s.Name)
		if s.Method != "POST" || s.Timeout != 10*time.Second || s.Executor != skills.ExecutorHTTP ||
			s.Identity.HMACKeyEnv != "HERMES_DEMO_HMAC_KEY" || !strings.HasPrefix(s.Endpoint, "/") {
			t.Errorf("%s: %+v", s.Name, s)
		}
		if spec := s.Spec(); !strings.Contains(spec.Description, s.Usage) || s.Usage == "" {
			t.Errorf("%s: description %q does not carry the usage notes", s.Name, spec.Description)
		}
	}
	if got, want := strings.Join(names, ","), "hr_leave_balance,hr_policy_search,it_ticket_create,it_ticket_status"; got != want {
		t.Errorf("names = %s, want %s", got, want)
	}
	if got, want := string(defs[0].Parameters), `{"properties":{},"type":"object"}`; got != want {
		t.Errorf("hr_leave_balance parameters = %s, want %s", got, want)
	}
	if got := string(defs[1].Parameters); !strings.Contains(got, `"required":["query"]`) {
		t.Errorf("hr_policy_search parameters = %s", got)
	}
}

// skill writes a SKILL.md from front matter lines; the body is fixed.
func skill(lines ...string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("---\n" + strings.Join(lines, "\n") + "\n---\nUsage notes.\n")}
}

var okLines = []string{"name: a", "description: test skill", "endpoint: /a"}

func with(extra ...string) []string { return append(append([]string(nil), okLines...), extra...) }

func TestLoadDir_Errors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  string // the error must contain it, file and field included
	}{
		{"NoFrontMatter", fstest.MapFS{"a/SKILL.md": {Data: []byte("# A\n")}}, `a/SKILL.md: must start with a "---" line`},
		{"Unclosed", fstest.MapFS{"a/SKILL.md": {Data: []byte("---\nname: a\n")}}, "a/SKILL.md: front matter is not closed"},
		{"BadYAML", fstest.MapFS{"a/SKILL.md": skill("name: [a")}, "a/SKILL.md: front matter is not valid YAML"},
		{"NotMapping", fstest.MapFS{"a/SKILL.md": skill("- a")}, "a/SKILL.md:2: must be a mapping"},
		{"UnknownField", fstest.MapFS{"a/SKILL.md": skill(with("timout: 5s")...)}, "a/SKILL.md:5: timout: unknown field"},
		{"UnknownNestedField", fstest.MapFS{"a/SKILL.md": skill(with("auth:", "  type: bearer", "  token_env: T", "  tokn: x")...)},
			"a/SKILL.md:8: auth.tokn: unknown field"},
		{"BadName", fstest.MapFS{"a/SKILL.md": skill("name: HR-Leave", "description: d", "endpoint: /a")}, `a/SKILL.md:2: name: "HR-Leave" must match`},
		{"NameNotString", fstest.MapFS{"a/SKILL.md": skill("name: {x: 1}", "description: d", "endpoint: /a")}, "a/SKILL.md:2: name: must be a string"},
		{"MissingName", fstest.MapFS{"a/SKILL.md": skill("description: d", "endpoint: /a")}, "a/SKILL.md: name: is required"},
		{"MissingDescription", fstest.MapFS{"a/SKILL.md": skill("name: a", "endpoint: /a")}, "a/SKILL.md: description: is required"},
		{"ParametersList", fstest.MapFS{"a/SKILL.md": skill(with("parameters: [1, 2]")...)}, "a/SKILL.md:5: parameters: must be a JSON Schema object"},
		{"ParametersNotObjectType", fstest.MapFS{"a/SKILL.md": skill(with("parameters: {type: string}")...)}, "a/SKILL.md:5: parameters: must be a JSON Schema object"},
		{"ParametersTypo", fstest.MapFS{"a/SKILL.md": skill(with("parameters: {type: object, properties: {q: {type: string}}, require: [q]}")...)},
			`parameters: unknown JSON Schema keyword "require"`},
		{"ParametersNestedTypo", fstest.MapFS{"a/SKILL.md": skill(with("parameters: {type: object, properties: {q: {typ: string}}}")...)},
			`parameters: unknown JSON Schema keyword "typ" at parameters.properties.q`},
		{"RequiredNotDeclared", fstest.MapFS{"a/SKILL.md": skill(with("parameters: {type: object, required: [q]}")...)},
			`parameters: required property "q" is not in properties`},
		{"ExecutorMCP", fstest.MapFS{"a/SKILL.md": skill(with("executor: mcp")...)}, `a/SKILL.md:5: executor: "mcp" not supported yet`},
		{"EndpointRelative", fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d", "endpoint: hr/leave")}, "a/SKILL.md:4: endpoint:"},
		{"EndpointCredentials", fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d", "endpoint: https://u:p@hr.example.com/x")},
			"endpoint: must not contain credentials"},
		{"MissingEndpoint", fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d")}, "a/SKILL.md: endpoint: is required"},
		{"BadMethod", fstest.MapFS{"a/SKILL.md": skill(with("method: TRACE")...)}, `a/SKILL.md:5: method: "TRACE" not supported`},
		{"BadTimeout", fstest.MapFS{"a/SKILL.md": skill(with("timeout: soon")...)}, "a/SKILL.md:5: timeout: want a duration"},
		{"TimeoutTooLong", fstest.MapFS{"a/SKILL.md": skill(with("timeout: 1h")...)}, "a/SKILL.md:5: timeout: 1h0m0s out of range"},
		{"AuthType", fstest.MapFS{"a/SKILL.md": skill(with("auth: {type: basic, token_env: T}")...)}, `a/SKILL.md:5: auth.type: "basic" not supported`},
		{"AuthNoTokenEnv", fstest.MapFS{"a/SKILL.md": skill(with("auth: {type: bearer}")...)}, "a/SKILL.md: auth.token_env:"},
		{"HMACEnvName", fstest.MapFS{"a/SKILL.md": skill(with("identity: {hmac_key_env: not-a-var}")...)}, "a/SKILL.md:5: identity.hmac_key_env:"},
		{"DuplicateNames", fstest.MapFS{"a/SKILL.md": skill(okLines...), "b/SKILL.md": skill(okLines...)},
			`b/SKILL.md: name: duplicate skill name "a", already defined in a/SKILL.md`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := skills.LoadDir(tc.files)
			if err == nil {
				t.Fatalf("LoadDir: no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q\nwant it to contain %q", err, tc.want)
			}
			var le *skills.LoadError
			if !errors.As(err, &le) {
				t.Errorf("err %T is not a *skills.LoadError", err)
			}
		})
	}
}

func TestLoadDir_BriefExample(t *testing.T) {
	fsys := fstest.MapFS{"hr_leave/SKILL.md": skill("name: hr_leave", "description: d", "endpoint: /a", "parameters: [query]")}
	_, err := skills.LoadDir(fsys)
	var le *skills.LoadError
	if !errors.As(err, &le) || le.File != "hr_leave/SKILL.md" || le.Field != "parameters" || le.Line != 5 {
		t.Fatalf("err = %#v", err)
	}
	if got, want := err.Error(), "hr_leave/SKILL.md:5: parameters: must be a JSON Schema object"; got != want {
		t.Errorf("err = %q, want %q", got, want)
	}
}

func TestLoadDir_KeepsValidSkills(t *testing.T) {
	fsys := fstest.MapFS{
		"good/SKILL.md":     skill(okLines...),
		"broken/SKILL.md":   skill("name: b"),
		"notes/README.md":   {Data: []byte("not a skill")},
		"nested/x/SKILL.md": skill("name: nested", "description: d", "endpoint: /n"),
	}
	defs, err := skills.LoadDir(fsys)
	if err == nil || !strings.Contains(err.Error(), "broken/SKILL.md") {
		t.Errorf("err = %v, want the broken skill named", err)
	}
	if len(defs) != 1 || defs[0].Name != "a" || defs[0].File != "good/SKILL.md" {
		t.Errorf("defs = %+v, want only the good skill (one directory level)", defs)
	}
}

func TestParse_Defaults(t *testing.T) {
	data := "\xef\xbb\xbf---\r\nname: a\r\ndescription: |\r\n  两行\r\n  说明\r\nendpoint: https://hr.example.com/x\r\nmethod: get\r\n---\r\n\r\n正文\r\n"
	s, err := skills.Parse("a/SKILL.md", []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if s.Description != "两行\n说明" || s.Usage != "正文" || s.Method != "GET" || s.Timeout != skills.DefaultTimeout ||
		s.Executor != "http" || s.Auth != nil || string(s.Parameters) != `{"properties":{},"type":"object"}` {
		t.Errorf("skill = %+v", s)
	}
}
