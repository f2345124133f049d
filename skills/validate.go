package skills

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"
)

// maxDisplayName bounds display_name: it is shown in the skill index and in
// partial answers, one line per skill.
const maxDisplayName = 20

var (
	nameRE   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	envRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerRE = regexp.MustCompile(`^[A-Za-z0-9-]+$`)
)

// methodHasBody says, per allowed method, whether arguments travel in the
// body (true) or as query parameters (false).
var methodHasBody = map[string]bool{
	http.MethodPost:   true,
	http.MethodPut:    true,
	http.MethodPatch:  true,
	http.MethodGet:    false,
	http.MethodDelete: false,
}

var contentTypes = []string{ContentJSON, ContentForm, ContentMultipart}

var retryConditions = []string{RetryOnTimeout, RetryOn5xx, RetryOn429}

// validator collects every problem of one definition, so `hermes skills
// check` can report them all at once instead of one per run.
type validator struct{ errs []error }

func (v *validator) bad(field, format string, args ...any) {
	v.errs = append(v.errs, &fieldError{field: field, err: fmt.Errorf(format, args...)})
}

func (v *validator) add(field string, err error) {
	if err != nil {
		v.errs = append(v.errs, &fieldError{field: field, err: err})
	}
}

// normalize checks what each field means and fills defaults. It is shared by
// Parse and NewRegistry so that skills built in code obey the same rules.
// The error joins one *fieldError per problem.
func (s *Skill) normalize() error {
	v := &validator{}
	switch {
	case s.Name == "":
		v.bad("name", "is required")
	case !nameRE.MatchString(s.Name):
		v.bad("name", "%q must match %s", s.Name, nameRE)
	}
	s.Description = strings.TrimSpace(s.Description)
	if s.Description == "" {
		v.bad("description", "is required: say when to use the skill and when not to")
	}
	if s.Executor == "" {
		s.Executor = ExecutorHTTP
	}
	switch s.Executor {
	case ExecutorHTTP:
		s.normalizeHTTP(v)
	case ExecutorMCP:
		s.normalizeMCP(v)
	case ExecutorCommand:
		s.normalizeCommand(v)
	default:
		v.bad("executor", "%q not supported (supported: %s, %s, %s)", s.Executor, ExecutorHTTP, ExecutorMCP, ExecutorCommand)
	}
	switch {
	case s.Timeout == 0:
		s.Timeout = DefaultTimeout
	case s.Timeout < 0 || s.Timeout > MaxTimeout:
		v.bad("timeout", "%s out of range (0, %s]", s.Timeout, MaxTimeout)
	}
	s.normalizeRetry(v)
	s.normalizeBreaker(v)
	s.normalizeAuth(v)
	s.normalizeConfirm(v)
	if !s.Access.empty() && len(s.Access.Corps) == 0 {
		v.bad("access.corps", "is required with any access rule: user, department and chat ids are only unique within a corp")
	}
	switch s.Reports {
	case "":
		s.Reports = ReportsAdmin
	case ReportsAdmin, ReportsAllow:
	default:
		v.bad("reports", "%q, want %s (a write runs only in reports an admin creates) or %s (also in reports users create in chat)",
			s.Reports, ReportsAdmin, ReportsAllow)
	}
	if s.Async && s.Executor != ExecutorHTTP {
		v.bad("async", "only HTTP skills can answer 202 and call back")
	}
	if s.Files && s.Executor != ExecutorHTTP {
		// The URLs travel in an HTTP header (HeaderFiles); the MCP and
		// command executors would silently drop them.
		v.bad("files", "only HTTP skills can take files")
	}
	if s.ResponseTemplate != "" {
		_, err := template.New("response").Parse(s.ResponseTemplate)
		v.add("response_template", err)
	}
	v.add("triggers", s.Triggers.validate())
	s.DisplayName = strings.TrimSpace(s.DisplayName)
	if utf8.RuneCountInString(s.DisplayName) > maxDisplayName {
		v.bad("display_name", "is %d characters; keep it under %d, it is shown in lists", utf8.RuneCountInString(s.DisplayName), maxDisplayName)
	}
	for i, w := range s.Synonyms {
		if strings.TrimSpace(w) == "" {
			v.bad(fmt.Sprintf("synonyms[%d]", i), "is empty")
		}
	}
	if len(s.Parameters) == 0 {
		s.Parameters = defaultParameters
	}
	args, canonical, err := compileParameters(s.Parameters)
	if err != nil {
		v.add("parameters", err)
	} else {
		s.Parameters, s.args = canonical, args
		for _, name := range slices.Sorted(maps.Keys(s.ParameterMap)) {
			if _, ok := args.Schema().Properties[name]; !ok {
				v.bad("parameter_map."+name, "%q is not a property in parameters", name)
			}
		}
	}
	return errors.Join(v.errs...)
}

func (s *Skill) normalizeHTTP(v *validator) {
	v.add("endpoint", checkEndpoint(s.Endpoint))
	s.Method = strings.ToUpper(s.Method)
	if s.Method == "" {
		s.Method = DefaultMethod
	}
	hasBody, ok := methodHasBody[s.Method]
	if !ok {
		v.bad("method", "%q not supported (use GET, POST, PUT, PATCH or DELETE)", s.Method)
	}
	if s.ContentType == "" {
		s.ContentType = ContentJSON
	}
	switch {
	case !slices.Contains(contentTypes, s.ContentType):
		v.bad("content_type", "%q not supported (use %s)", s.ContentType, strings.Join(contentTypes, ", "))
	case ok && !hasBody && s.ContentType != ContentJSON:
		v.bad("content_type", "%s sends arguments in the query string; a body content type makes no sense", s.Method)
	}
	for name, api := range s.ParameterMap {
		if api == "" {
			v.bad("parameter_map."+name, "must name the API's parameter")
		}
	}
	for _, code := range s.SuccessStatus {
		if code < 100 || code > 599 {
			v.bad("success_status", "%d is not an HTTP status", code)
		}
	}
	if s.MCP != nil || s.Command != nil {
		v.bad("executor", "http skills take no mcp or command section")
	}
}

func (s *Skill) normalizeMCP(v *validator) {
	if s.MCP == nil {
		s.MCP = &MCPConfig{}
	}
	if s.MCP.Tool == "" {
		s.MCP.Tool = s.Name
	}
	switch {
	case s.Endpoint != "" && s.MCP.Command != "":
		v.bad("mcp.command", "give either endpoint (streamable HTTP) or mcp.command (stdio), not both")
	case s.Endpoint != "":
		v.add("endpoint", checkEndpoint(s.Endpoint))
	case s.MCP.Command != "":
		if !filepath.IsAbs(s.MCP.Command) {
			v.bad("mcp.command", "%q must be an absolute path", s.MCP.Command)
		}
	default:
		v.bad("endpoint", "is required: the MCP server's URL (or mcp.command for a stdio server)")
	}
	s.httpOnlyFields(v)
	if s.Command != nil {
		v.bad("command", "only for executor command")
	}
}

func (s *Skill) normalizeCommand(v *validator) {
	c := s.Command
	if c == nil {
		v.bad("command", "is required for executor command")
		return
	}
	if !filepath.IsAbs(c.Path) {
		v.bad("command.path", "%q must be an absolute path", c.Path)
	}
	if c.MaxOutputBytes < 0 {
		v.bad("command.max_output_bytes", "must not be negative")
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	s.argvTmpl, s.endOfOpts = nil, -1
	if !c.NoEndOfOptions {
		s.endOfOpts = slices.IndexFunc(c.Argv, rendersData)
	}
	for i, arg := range c.Argv {
		t, err := newTemplate(fmt.Sprintf("argv[%d]", i), arg)
		if err != nil {
			v.add(fmt.Sprintf("command.argv[%d]", i), err)
			continue
		}
		s.argvTmpl = append(s.argvTmpl, t)
	}
	if s.Endpoint != "" {
		v.bad("endpoint", "not used by executor command")
	}
	if len(s.ParameterMap) > 0 {
		v.bad("parameter_map", "not used by executor command; name the arguments in command.argv")
	}
	s.httpOnlyFields(v)
	if s.MCP != nil {
		v.bad("mcp", "only for executor mcp")
	}
}

// rendersData reports an argv entry that starts with a template: its
// first characters come from the model's arguments or the caller, not
// from the definition, so it could start with "-". ("--user={{...}}" and
// "INC-{{...}}" cannot.)
func rendersData(arg string) bool { return strings.HasPrefix(arg, "{{") }

// httpOnlyFields refuses HTTP settings on other executors, where they
// would silently mean nothing.
func (s *Skill) httpOnlyFields(v *validator) {
	for field, set := range map[string]bool{
		"method":         s.Method != "",
		"content_type":   s.ContentType != "",
		"query_params":   len(s.QueryParams) > 0,
		"success_status": len(s.SuccessStatus) > 0,
	} {
		if set {
			v.bad(field, "only for executor http")
		}
	}
}

func (s *Skill) normalizeRetry(v *validator) {
	r := &s.Retry
	switch {
	case r.MaxAttempts == 0:
		r.MaxAttempts = 1
	case r.MaxAttempts < 0 || r.MaxAttempts > MaxRetryAttempts:
		v.bad("retry.max_attempts", "%d out of range [1, %d]", r.MaxAttempts, MaxRetryAttempts)
	}
	if r.Backoff < 0 || r.MaxBackoff < 0 {
		v.bad("retry.backoff", "must not be negative")
	}
	if r.Backoff == 0 {
		r.Backoff = DefaultRetryBackoff
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = max(DefaultRetryMaxBackoff, r.Backoff)
	}
	if r.Jitter < 0 || r.Jitter > 1 {
		v.bad("retry.jitter", "%v out of range [0, 1]", r.Jitter)
	}
	if len(r.On) == 0 {
		r.On = slices.Clone(retryConditions)
	}
	for _, on := range r.On {
		if !slices.Contains(retryConditions, on) {
			v.bad("retry.on", "%q unknown (use %s)", on, strings.Join(retryConditions, ", "))
		}
	}
}

func (s *Skill) normalizeBreaker(v *validator) {
	if b := s.Breaker; b != nil {
		if b.Failures < 0 || b.OpenFor < 0 {
			v.bad("circuit_breaker", "failures and open_for must not be negative")
		}
		if b.Failures == 0 {
			b.Failures = DefaultBreakerFailures
		}
		if b.OpenFor == 0 {
			b.OpenFor = DefaultBreakerOpenFor
		}
	}
	switch {
	case s.Fallback == "":
	case s.Fallback == s.Name:
		v.bad("fallback", "a skill cannot fall back to itself")
	case !nameRE.MatchString(s.Fallback):
		v.bad("fallback", "%q is not a skill name", s.Fallback)
	case s.Breaker == nil:
		v.bad("fallback", "is used while the circuit breaker is open; add a circuit_breaker section")
	}
}

func (s *Skill) normalizeAuth(v *validator) {
	if a := s.Auth; a != nil {
		switch a.Type {
		case AuthBearer:
		case AuthHeader:
			if !headerRE.MatchString(a.Header) {
				v.bad("auth.header", "%q is not a header name", a.Header)
			}
		default:
			v.bad("auth.type", "%q not supported (supported: %s, %s)", a.Type, AuthBearer, AuthHeader)
		}
		if a.Type == AuthBearer && a.Header != "" {
			v.bad("auth.header", "only for type header")
		}
		v.add(secretField("auth.", "token", a.TokenFile), checkSecretSource(a.TokenEnv, a.TokenFile, "token_env", "token_file"))
	}
	id := s.Identity
	if id.None && (id.HMACKeyEnv != "" || id.HMACKeyFile != "") {
		v.bad("identity", `is "none" but names a key too`)
	}
	if id.HMACKeyEnv != "" || id.HMACKeyFile != "" {
		v.add(secretField("identity.", "hmac_key", id.HMACKeyFile),
			checkSecretSource(id.HMACKeyEnv, id.HMACKeyFile, "hmac_key_env", "hmac_key_file"))
	}
}

// secretField names the field an error about a secret source is about:
// the file when one is given, else the variable.
func secretField(prefix, name, file string) string {
	if file != "" {
		return prefix + name + "_file"
	}
	return prefix + name + "_env"
}

// checkSecretSource wants exactly one of an environment variable and an
// absolute file path.
func checkSecretSource(env, file, envField, fileField string) error {
	switch {
	case env != "" && file != "":
		return fmt.Errorf("give either %s or %s, not both", envField, fileField)
	case env == "" && file == "":
		return fmt.Errorf("is required: the environment variable holding the secret (or %s)", fileField)
	case env != "" && !envRE.MatchString(env):
		return fmt.Errorf("%q is not an environment variable name", env)
	case file != "" && !filepath.IsAbs(file):
		return fmt.Errorf("%s %q must be an absolute path", fileField, file)
	}
	return nil
}

func (s *Skill) normalizeConfirm(v *validator) {
	s.confirmTmpl = nil
	c := s.Confirm
	if c == nil || !c.Required {
		if c != nil && c.Prompt != "" {
			v.bad("confirm.prompt", "set but confirmation is not required")
		}
		return
	}
	prompt := c.Prompt
	if prompt == "" {
		prompt = defaultConfirmPrompt
	}
	t, err := newTemplate("confirm", prompt)
	v.add("confirm.prompt", err)
	s.confirmTmpl = t
}

func checkEndpoint(e string) error {
	if e == "" {
		return errors.New("is required")
	}
	if isPath(e) {
		return nil // joined to Options.BaseURL
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an absolute http(s) URL or a path starting with /", e)
	}
	if u.User != nil {
		// Credentials in a URL end up in logs and traces.
		return errors.New("must not contain credentials; use auth.token_env")
	}
	return nil
}

func isPath(endpoint string) bool {
	return strings.HasPrefix(endpoint, "/") && !strings.HasPrefix(endpoint, "//")
}

// writeVerbs are name words that suggest a skill changes something.
var writeVerbs = []string{"reset", "delete", "remove", "create", "update", "cancel", "approve",
	"submit", "pay", "transfer", "grant", "revoke", "disable", "unlock", "set", "change"}

// isWriteish guesses whether a skill changes something, for Check's
// confirmation warning: a write method (or any non-HTTP skill) with a name
// word that sounds like a change ("it_password_reset", not "hr_payslip").
func (s *Skill) isWriteish() bool {
	if s.Executor == ExecutorHTTP && s.Method == http.MethodDelete {
		return true
	}
	if s.Executor == ExecutorHTTP && !methodHasBody[s.Method] {
		return false
	}
	for _, word := range strings.Split(s.Name, "_") {
		if slices.Contains(writeVerbs, word) {
			return true
		}
	}
	return false
}

// worstCase is the longest a call can take when every attempt times out:
// the attempts plus the waits between them (without jitter). Check compares
// it with the run budget.
func (s *Skill) worstCase() time.Duration {
	total := time.Duration(s.Retry.MaxAttempts) * s.Timeout
	wait := s.Retry.Backoff
	for i := 1; i < s.Retry.MaxAttempts; i++ {
		total += min(wait, s.Retry.MaxBackoff)
		wait *= 2
	}
	return total
}
