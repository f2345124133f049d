// Package skills loads skill definitions (a directory per skill holding a
// SKILL.md), binds them to the verified caller and runs them. A bound skill is
// a Tool: the only thing the agent can execute.
//
// The caller's identity travels to backends in headers set by the gateway and
// signed with HMAC (see identity.go); nothing the model writes can change it.
package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Executors a skill can name. Only HTTP exists so far; MCP and command
// executors come later and are refused at load until then.
const (
	ExecutorHTTP = "http"
)

// Auth types a skill can name.
const (
	AuthBearer = "bearer"
)

// Defaults applied to a skill definition when a field is left out.
const (
	DefaultMethod  = "POST"
	DefaultTimeout = 10 * time.Second
	// MaxTimeout bounds a skill's timeout: a chat user is waiting and the
	// agent run has its own wall clock (90s by default).
	MaxTimeout = 2 * time.Minute
)

// defaultParameters is the schema of a skill that takes no arguments. Models
// expect an object schema even then.
var defaultParameters = json.RawMessage(`{"properties":{},"type":"object"}`)

// Skill is one validated skill definition. LoadDir fills it from SKILL.md;
// code may also build one and pass it to NewRegistry, which validates it.
// A Skill must not be changed after it is passed to NewRegistry.
type Skill struct {
	Name        string          // ^[a-z][a-z0-9_]{0,63}$, the tool name the model sees
	Description string          // when to use it and when not to
	Usage       string          // Markdown body of SKILL.md, appended to the description
	Parameters  json.RawMessage // JSON Schema of the arguments object; default: no arguments
	Executor    string          // "http" (default)
	Endpoint    string          // absolute http(s) URL, or a path joined to Options.BaseURL
	Method      string          // HTTP method, default POST
	Timeout     time.Duration   // per call, default 10s, at most MaxTimeout
	Auth        *Auth           // credentials of the skill itself; nil: none
	Identity    IdentityConfig  // how the caller's identity is signed
	File        string          // where the definition came from, for error messages

	args *jsonschema.Resolved // compiled Parameters, set by validate
}

// Auth is how Hermes authenticates itself to a skill's backend. The secret
// lives in the environment, never in the definition, so definitions can be
// committed and shown in the console.
type Auth struct {
	Type     string // "bearer"
	TokenEnv string // environment variable holding the token, read at call time
}

// IdentityConfig says how the caller's identity headers are signed.
type IdentityConfig struct {
	// HMACKeyEnv names the environment variable holding the HMAC key for
	// X-Hermes-Signature. Empty: Options.DefaultHMACKeyEnv, and if that is
	// empty too the identity headers are sent unsigned.
	HMACKeyEnv string
}

// Spec is what the model is shown about this skill: the description with the
// usage notes appended.
func (s *Skill) Spec() Spec {
	desc := s.Description
	if s.Usage != "" {
		desc += "\n\n" + s.Usage
	}
	return Spec{Name: s.Name, Description: desc, Parameters: s.Parameters}
}

var (
	nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	envRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// methodHasBody says, per allowed method, whether arguments travel as a JSON
// body (true) or as query parameters (false).
var methodHasBody = map[string]bool{
	http.MethodPost:   true,
	http.MethodPut:    true,
	http.MethodPatch:  true,
	http.MethodGet:    false,
	http.MethodDelete: false,
}

// normalize checks what each field means and fills defaults. It is shared by
// Parse and NewRegistry so that skills built in code obey the same rules.
// Errors are *fieldError.
func (s *Skill) normalize() error {
	bad := func(field string, format string, args ...any) error {
		return &fieldError{field: field, err: fmt.Errorf(format, args...)}
	}
	switch {
	case s.Name == "":
		return bad("name", "is required")
	case !nameRE.MatchString(s.Name):
		return bad("name", "%q must match %s", s.Name, nameRE)
	}
	s.Description = strings.TrimSpace(s.Description)
	if s.Description == "" {
		return bad("description", "is required: say when to use the skill and when not to")
	}
	if s.Executor == "" {
		s.Executor = ExecutorHTTP
	}
	if s.Executor != ExecutorHTTP {
		return bad("executor", "%q not supported yet (supported: %s)", s.Executor, ExecutorHTTP)
	}
	if err := checkEndpoint(s.Endpoint); err != nil {
		return &fieldError{field: "endpoint", err: err}
	}
	s.Method = strings.ToUpper(s.Method)
	if s.Method == "" {
		s.Method = DefaultMethod
	}
	if _, ok := methodHasBody[s.Method]; !ok {
		return bad("method", "%q not supported (use GET, POST, PUT, PATCH or DELETE)", s.Method)
	}
	switch {
	case s.Timeout == 0:
		s.Timeout = DefaultTimeout
	case s.Timeout < 0 || s.Timeout > MaxTimeout:
		return bad("timeout", "%s out of range (0, %s]", s.Timeout, MaxTimeout)
	}
	if a := s.Auth; a != nil {
		if a.Type != AuthBearer {
			return bad("auth.type", "%q not supported (supported: %s)", a.Type, AuthBearer)
		}
		if !envRE.MatchString(a.TokenEnv) {
			return bad("auth.token_env", "%q is not an environment variable name", a.TokenEnv)
		}
	}
	if env := s.Identity.HMACKeyEnv; env != "" && !envRE.MatchString(env) {
		return bad("identity.hmac_key_env", "%q is not an environment variable name", env)
	}
	if len(s.Parameters) == 0 {
		s.Parameters = defaultParameters
	}
	args, canonical, err := compileParameters(s.Parameters)
	if err != nil {
		return &fieldError{field: "parameters", err: err}
	}
	s.Parameters, s.args = canonical, args
	return nil
}

func checkEndpoint(e string) error {
	if e == "" {
		return errors.New("is required")
	}
	if strings.HasPrefix(e, "/") && !strings.HasPrefix(e, "//") {
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
