package skills_test

import (
	"errors"
	"fmt"
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
	byName := map[string]*skills.Skill{}
	var names []string
	for _, s := range defs {
		names = append(names, s.Name)
		byName[s.Name] = s
		// One key per backend: HR skills share the HR key, IT skills the IT key.
		keyEnv := skills.SampleITKeyEnv
		if strings.HasPrefix(s.Name, "hr_") {
			keyEnv = skills.SampleHRKeyEnv
		}
		if s.Method != "POST" || s.Timeout != 10*time.Second || s.Executor != skills.ExecutorHTTP ||
			s.Identity.HMACKeyEnv != keyEnv || !strings.HasPrefix(s.Endpoint, "/") || s.Triggers.Empty() {
			t.Errorf("%s: %+v", s.Name, s)
		}
		if spec := s.Spec(); !strings.Contains(spec.Description, s.Usage) || s.Usage == "" || len(spec.Examples) == 0 {
			t.Errorf("%s: spec %+v lacks the usage notes or examples", s.Name, spec)
		}
	}
	if got, want := strings.Join(names, ","), "hr_leave_balance,hr_payslip_summary,hr_policy_search,hr_team_leave,it_password_reset,"+
		"it_ticket_create,it_ticket_status,it_ticket_weekly,it_vpn_access"; got != want {
		t.Errorf("names = %s, want %s", got, want)
	}
	if got, want := string(byName["hr_leave_balance"].Parameters), `{"properties":{},"type":"object"}`; got != want {
		t.Errorf("hr_leave_balance parameters = %s, want %s", got, want)
	}
	if got := string(byName["hr_policy_search"].Parameters); !strings.Contains(got, `"required":["query"]`) {
		t.Errorf("hr_policy_search parameters = %s", got)
	}
	reset := byName["it_password_reset"]
	if reset.ContentType != skills.ContentForm || reset.ParameterMap["system"] != "target_system" || !reset.Spec().Confirm ||
		!strings.Contains(reset.Confirm.Prompt, "{{.Caller.UserID}}") || reset.Retry.MaxAttempts != 2 || reset.Retry.Jitter != 0.2 ||
		reset.Breaker == nil || reset.Breaker.OpenFor != 5*time.Minute {
		t.Errorf("it_password_reset = %+v", reset)
	}
	if vpn := byName["it_vpn_access"]; !vpn.Async || vpn.Confirm == nil || vpn.Confirm.Required {
		t.Errorf("it_vpn_access = %+v, want async without confirmation", vpn)
	}
	if pay := byName["hr_payslip_summary"]; pay.ResponseTemplate == "" || len(pay.SafeFields) != 4 || !pay.ParallelSafe {
		t.Errorf("hr_payslip_summary = %+v", pay)
	}
	if re := byName["it_ticket_status"].Triggers; !re.Match("INC-1001 怎么样了") || re.Match("你好") {
		t.Errorf("it_ticket_status triggers = %+v", re)
	}
	// The samples are the documentation's examples: they pass the checker
	// without errors once a base URL is known.
	for _, f := range skills.Check(skills.SamplesFS(), skills.CheckOptions{BaseURL: "https://hr.example.com"}) {
		t.Errorf("samples: %s", f)
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
		{"ExecutorUnknown", fstest.MapFS{"a/SKILL.md": skill(with("executor: grpc")...)}, `a/SKILL.md:5: executor: "grpc" not supported`},
		{"EndpointRelative", fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d", "endpoint: hr/leave")}, "a/SKILL.md:4: endpoint:"},
		{"EndpointCredentials", fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d", "endpoint: https://u:p@hr.example.com/x")},
			"endpoint: must not contain credentials"},
		{"MissingEndpoint", fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d")}, "a/SKILL.md: endpoint: is required"},
		{"BadMethod", fstest.MapFS{"a/SKILL.md": skill(with("method: TRACE")...)}, `a/SKILL.md:5: method: "TRACE" not supported`},
		{"BadTimeout", fstest.MapFS{"a/SKILL.md": skill(with("timeout: soon")...)}, "a/SKILL.md:5: timeout: want a duration"},
		{"TimeoutTooLong", fstest.MapFS{"a/SKILL.md": skill(with("timeout: 1h")...)}, "a/SKILL.md:5: timeout: 1h0m0s out of range"},
		{"AuthType", fstest.MapFS{"a/SKILL.md": skill(with("auth: {type: basic, token_env: T}")...)}, `a/SKILL.md:5: auth.type: "basic" not supported`},
		{"AuthNoTokenEnv", fstest.MapFS{"a/SKILL.md": skill(with("auth: {type: bearer}")...)}, "a/SKILL.md:5: auth.token_env: is required"},
		{"HMACEnvName", fstest.MapFS{"a/SKILL.md": skill(with("identity: {hmac_key_env: not-a-var}")...)}, "a/SKILL.md:5: identity.hmac_key_env:"},
		{"BadContentType", fstest.MapFS{"a/SKILL.md": skill(with("content_type: text/xml")...)}, `a/SKILL.md:5: content_type: "text/xml" not supported`},
		{"FormWithGet", fstest.MapFS{"a/SKILL.md": skill(with("method: GET", "content_type: application/x-www-form-urlencoded")...)},
			"content_type: GET sends arguments in the query string"},
		{"MapUnknownParameter", fstest.MapFS{"a/SKILL.md": skill(with("parameter_map: {x: y}")...)}, `parameter_map.x: "x" is not a property`},
		{"SuccessStatus", fstest.MapFS{"a/SKILL.md": skill(with("success_status: [200, 999]")...)}, "success_status: 999 is not an HTTP status"},
		{"SuccessStatusShape", fstest.MapFS{"a/SKILL.md": skill(with("success_status: 200")...)}, "success_status: must be a list of integers"},
		{"RetryOn", fstest.MapFS{"a/SKILL.md": skill(with("retry: {on: [503]}")...)}, `a/SKILL.md:5: retry.on: "503" unknown`},
		{"RetryJitter", fstest.MapFS{"a/SKILL.md": skill(with("retry:", "  jitter: 2")...)}, "a/SKILL.md:6: retry.jitter: 2 out of range"},
		{"BreakerUnknown", fstest.MapFS{"a/SKILL.md": skill(with("circuit_breaker: {failures: 3, open: 5m}")...)}, "circuit_breaker.open: unknown field"},
		{"FallbackWithoutBreaker", fstest.MapFS{"a/SKILL.md": skill(with("fallback: b")...)}, "fallback: is used while the circuit breaker is open"},
		{"FallbackSelf", fstest.MapFS{"a/SKILL.md": skill(with("fallback: a", "circuit_breaker: {}")...)}, "cannot fall back to itself"},
		{"ConfirmShape", fstest.MapFS{"a/SKILL.md": skill(with("confirm: yes")...)}, "confirm: must be true, false or a mapping"},
		{"ConfirmTemplate", fstest.MapFS{"a/SKILL.md": skill(with("confirm: {prompt: '{{.Args.x'}")...)}, "confirm.prompt: not a valid template"},
		{"TriggerRegex", fstest.MapFS{"a/SKILL.md": skill(with("triggers: {intent_regex: ['(']}")...)}, "triggers: intent_regex[0]:"},
		{"ReportsValue", fstest.MapFS{"a/SKILL.md": skill(with("reports: always")...)}, `a/SKILL.md:5: reports: "always", want admin`},
		{"AsyncMCP", fstest.MapFS{"a/SKILL.md": skill(with("executor: mcp", "async: true")...)}, "async: only HTTP skills"},
		{"FilesMCP", fstest.MapFS{"a/SKILL.md": skill(with("executor: mcp", "files: true")...)}, "a/SKILL.md:6: files: only HTTP skills can take files"},
		{"FilesCommand", fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d", "executor: command", "command: {path: /bin/x}", "files: true")},
			"a/SKILL.md:6: files: only HTTP skills can take files"},
		{"FilesShape", fstest.MapFS{"a/SKILL.md": skill(with("files: [a.pdf]")...)}, "a/SKILL.md:5: files: must be true or false"},
		{"AuthBothSources", fstest.MapFS{"a/SKILL.md": skill(with("auth: {type: bearer, token_env: T, token_file: /t}")...)}, "give either token_env or token_file"},
		{"AuthHeaderName", fstest.MapFS{"a/SKILL.md": skill(with("auth: {type: header, header: 'X Key', token_env: T}")...)}, `auth.header: "X Key" is not a header name`},
		{"CommandMissing", fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d", "executor: command")}, "command: is required"},
		{"CommandWithEndpoint", fstest.MapFS{"a/SKILL.md": skill(with("executor: command", "command: {path: /bin/x}")...)}, "endpoint: not used by executor command"},
		{"CommandArgvTemplate", fstest.MapFS{"a/SKILL.md": skill("name: a", "description: d", "executor: command",
			"command:", "  path: /bin/x", "  argv: [ok, '{{.Args']")}, "a/SKILL.md:7: command.argv[1]: not a valid template"},
		{"MCPBoth", fstest.MapFS{"a/SKILL.md": skill(with("executor: mcp", "mcp: {command: /bin/x}")...)}, "give either endpoint"},
		{"MCPMethod", fstest.MapFS{"a/SKILL.md": skill(with("executor: mcp", "method: GET")...)}, "method: only for executor http"},
		{"DuplicateNames", fstest.MapFS{"a/SKILL.md": skill(okLines...), "b/SKILL.md": skill(okLines...)},
			`b/SKILL.md:2: name: duplicate skill name "a", already defined in a/SKILL.md`},
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
		s.Executor != "http" || s.Auth != nil || s.Personal != nil || string(s.Parameters) != `{"properties":{},"type":"object"}` {
		t.Errorf("skill = %+v", s)
	}
}

func TestParse_AllFields(t *testing.T) {
	data := `---
name: it_password_reset
description: reset
parameters: {type: object, properties: {system: {type: string}}, required: [system]}
endpoint: /it/reset/{target}
method: put
content_type: multipart/form-data
parameter_map: {system: target}
query_params: [dry_run]
success_status: [200, 204]
timeout: 5s
retry: {backoff: 1s, max_backoff: 4s, jitter: 0.1, on: [timeout]}
circuit_breaker: {failures: 2, open_for: 1m}
fallback: it_ticket_create
auth: {type: header, header: X-Api-Key, token_file: /run/secrets/it}
identity: {hmac_key_file: /run/secrets/hmac}
access: {corps: [ww1], channels: [wecom], accounts: [app-it], users: [zhangsan], departments: [IT], chats: [c1]}
confirm: {prompt: "重置 {{.Caller.UserID}} 的 {{.Args.system}} 密码"}
response_template: "{{.summary}}"
triggers: {always: false, intent_contains: [密码], intent_regex: ["重置.*密码"]}
examples: [帮我重置 VPN 密码]
parallel_safe: true
safe_fields: [phone]
files: true
personal: false
---
`
	s, err := skills.Parse("x/SKILL.md", []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := fmt.Sprintf("%v %v %v %v %v", s.Method, s.ContentType, s.ParameterMap, s.QueryParams, s.SuccessStatus)
	if want != "PUT multipart/form-data map[system:target] [dry_run] [200 204]" {
		t.Errorf("http fields = %s", want)
	}
	if s.Retry.MaxAttempts != skills.DefaultRetryAttempts || s.Retry.Backoff != time.Second || s.Retry.MaxBackoff != 4*time.Second ||
		s.Retry.Jitter != 0.1 || fmt.Sprint(s.Retry.On) != "[timeout]" {
		t.Errorf("retry = %+v (a retry section without max_attempts means %d)", s.Retry, skills.DefaultRetryAttempts)
	}
	if *s.Breaker != (skills.BreakerPolicy{Failures: 2, OpenFor: time.Minute}) || s.Fallback != "it_ticket_create" {
		t.Errorf("breaker = %+v fallback %q", s.Breaker, s.Fallback)
	}
	if *s.Auth != (skills.Auth{Type: "header", Header: "X-Api-Key", TokenFile: "/run/secrets/it"}) || s.Identity.HMACKeyFile != "/run/secrets/hmac" {
		t.Errorf("auth = %+v identity = %+v", s.Auth, s.Identity)
	}
	if fmt.Sprint(s.Access) != "{[ww1] [wecom] [app-it] [zhangsan] [IT] [c1]}" || !s.Confirm.Required || s.ResponseTemplate != "{{.summary}}" {
		t.Errorf("access = %+v confirm = %+v", s.Access, s.Confirm)
	}
	if !s.Files {
		t.Errorf("files: true not parsed")
	}
	if s.Personal == nil || *s.Personal || s.Spec().Personal == nil {
		t.Errorf("personal: false parsed as %v", s.Personal)
	}
	spec := s.Spec()
	if !spec.Confirm || !spec.ParallelSafe || len(spec.Examples) != 1 || spec.SafeFields[0] != "phone" ||
		!spec.Triggers.Match("请帮我重置一下密码") || spec.Triggers.Match("你好") {
		t.Errorf("spec = %+v", spec)
	}
}

func TestParse_ReportsEveryError(t *testing.T) {
	_, err := skills.Parse("a/SKILL.md", []byte("---\nname: A\ndescription: d\nendpoint: /a\ntimout: 5s\nmethod: TRACE\n---\n"))
	var n int
	for _, want := range []string{"a/SKILL.md:2: name:", "a/SKILL.md:5: timout: unknown field", "a/SKILL.md:6: method:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
		n++
	}
	if got := strings.Count(err.Error(), "\n") + 1; got != n {
		t.Errorf("%d errors reported, want %d:\n%v", got, n, err)
	}
}
