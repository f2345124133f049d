package skills

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"
)

// Errors a Tool.Call can wrap besides ErrInvalidArguments; callers (circuit
// breakers, traces) branch on them with errors.Is. The texts are written to
// read well inside "skill NAME <text> ..." messages shown to the model.
var (
	ErrRefused       = errors.New("refused the request")      // backend answered 4xx
	ErrUnavailable   = errors.New("is unavailable")           // 3xx, 5xx, timeout, network
	ErrMisconfigured = errors.New("is misconfigured")         // a secret's environment variable is unset, no base URL
	ErrNoCaller      = errors.New("has no caller to act for") // Caller.UserID is empty
)

// DefaultMaxResponseBytes is how much of a backend's answer a call returns.
// The agent caps observations again (8 KiB by default); this cap only keeps
// a runaway backend from filling memory.
const DefaultMaxResponseBytes = 64 << 10

// Options configure a Registry.
type Options struct {
	// BaseURL is joined with endpoints given as a path ("/hr/leave-balance").
	// Required when any skill uses a path; an absolute http(s) URL.
	BaseURL string
	// HTTPClient runs HTTP skills. Default: a client that does not follow
	// redirects, so identity headers never travel to a host nobody chose.
	// Per-call timeouts come from each skill.
	HTTPClient *http.Client
	// Getenv reads secrets (tokens, HMAC keys) at every call, so rotated
	// secrets apply without a restart. Default os.Getenv.
	Getenv func(string) string
	// Now stamps X-Hermes-Timestamp. Default time.Now.
	Now func() time.Time
	// DefaultHMACKeyEnv names the environment variable of the HMAC key for
	// skills without identity.hmac_key_env. Empty: such skills send the
	// identity unsigned.
	DefaultHMACKeyEnv string
	// MaxResponseBytes caps the response body a call returns, default
	// DefaultMaxResponseBytes.
	MaxResponseBytes int
}

// Registry holds the validated skills and binds them to callers. It is safe
// for concurrent use.
type Registry struct {
	skills []*Skill // sorted by name: the tool list must be byte-stable
	opts   Options
}

// NewRegistry validates defs (defaults filled in copies; defs are not
// changed) and returns a registry.
//
// Errors: a skill that fails the SKILL.md rules (a *LoadError naming its
// file and field), duplicate names, or a path endpoint without a valid
// Options.BaseURL. Unset environment variables are not errors here, since
// secrets may be injected after start; see CheckEnv.
func NewRegistry(defs []*Skill, opts Options) (*Registry, error) {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("skills: base URL %q must be an absolute http(s) URL", opts.BaseURL)
		}
	}
	r := &Registry{opts: opts}
	seen := map[string]bool{}
	for _, def := range defs {
		s := *def
		if err := s.normalize(); err != nil {
			return nil, asLoadError(cmp.Or(s.File, s.Name), err, nil)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("skills: duplicate skill name %q", s.Name)
		}
		seen[s.Name] = true
		if isPath(s.Endpoint) && opts.BaseURL == "" {
			return nil, fmt.Errorf("skills: skill %s: endpoint %q is a path but no base URL is configured", s.Name, s.Endpoint)
		}
		r.skills = append(r.skills, &s)
	}
	slices.SortFunc(r.skills, func(a, b *Skill) int { return cmp.Compare(a.Name, b.Name) })
	return r, nil
}

// Skills returns the validated skills, sorted by name. Do not modify them.
func (r *Registry) Skills() []*Skill { return slices.Clone(r.skills) }

// ToolsFor binds every skill the caller may use, sorted by name. A bound
// tool's Call validates the arguments, then runs the skill for c; its errors
// wrap ErrInvalidArguments, ErrNoCaller, ErrMisconfigured, ErrRefused or
// ErrUnavailable (or the context's error) and never carry a secret.
func (r *Registry) ToolsFor(c Caller) []Tool {
	var tools []Tool
	for _, s := range r.skills {
		if r.allowed(s, c) {
			tools = append(tools, &boundTool{reg: r, skill: s, caller: c})
		}
	}
	return tools
}

// allowed is the seam for access control (which users, departments and
// chats may use a skill; a later issue). A skill the caller may not use is
// never bound, so the model neither sees it nor can call it.
func (r *Registry) allowed(*Skill, Caller) bool { return true }

// CheckEnv reports every environment variable a skill needs that is unset
// now, one error per variable naming the skill and field. The gateway logs
// it at start; calls fail with ErrMisconfigured until the variable is set.
func (r *Registry) CheckEnv() error {
	var errs []error
	for _, s := range r.skills {
		if s.Auth != nil && r.opts.Getenv(s.Auth.TokenEnv) == "" {
			errs = append(errs, fmt.Errorf("skill %s: auth.token_env: environment variable %s is not set", s.Name, s.Auth.TokenEnv))
		}
		if field, env := r.hmacKeyEnv(s); env != "" && r.opts.Getenv(env) == "" {
			errs = append(errs, fmt.Errorf("skill %s: %s: environment variable %s is not set", s.Name, field, env))
		}
	}
	return errors.Join(errs...)
}

// hmacKeyEnv returns which setting names the skill's HMAC key variable.
func (r *Registry) hmacKeyEnv(s *Skill) (field, env string) {
	if s.Identity.HMACKeyEnv != "" {
		return "identity.hmac_key_env", s.Identity.HMACKeyEnv
	}
	return "default HMAC key", r.opts.DefaultHMACKeyEnv
}

// executors run a skill by its Executor; MCP and command executors join here.
var executors = map[string]func(r *Registry, ctx context.Context, s *Skill, c Caller, args json.RawMessage) (Result, error){
	ExecutorHTTP: (*Registry).callHTTP,
}

// boundTool is a skill bound to one caller.
type boundTool struct {
	reg    *Registry
	skill  *Skill
	caller Caller
}

func (t *boundTool) Spec() Spec { return t.skill.Spec() }

// Call validates the arguments against the skill's schema and runs it for
// the bound caller. Errors wrap ErrInvalidArguments, ErrNoCaller,
// ErrMisconfigured, ErrRefused or ErrUnavailable, or the context's error
// when ctx ends first; none carries a secret.
func (t *boundTool) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	args, err := t.skill.validateArgs(args)
	if err != nil {
		return Result{}, err
	}
	if t.caller.UserID == "" {
		// Fail closed: a backend must never guess whose data to return.
		return Result{}, fmt.Errorf("skill %s %w", t.skill.Name, ErrNoCaller)
	}
	return executors[t.skill.Executor](t.reg, ctx, t.skill, t.caller, args)
}
