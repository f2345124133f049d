package skills

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/sony/gobreaker/v2"
)

// DefaultMaxResponseBytes is how much of a backend's answer a call returns.
// The agent caps observations again (8 KiB by default); this cap only keeps
// a runaway backend from filling memory.
const DefaultMaxResponseBytes = 64 << 10

// DefaultMaxParallel bounds how many calls of one Route request run at once.
const DefaultMaxParallel = 4

// Options configure a Registry. The zero value works for HTTP skills with
// absolute endpoints.
type Options struct {
	// BaseURL is joined with endpoints given as a path ("/hr/leave-balance").
	// Required when any skill uses a path; an absolute http(s) URL.
	BaseURL string
	// HTTPClient runs HTTP skills and MCP streamable HTTP sessions. Default:
	// a client that does not follow redirects, so identity headers never
	// travel to a host nobody chose. Per-call timeouts come from each skill.
	HTTPClient *http.Client
	// Getenv reads secrets (tokens, HMAC keys) at every call, so rotated
	// secrets apply without a restart. Default os.Getenv.
	Getenv func(string) string
	// Now stamps X-Hermes-Timestamp and measures durations. Default time.Now.
	Now func() time.Time
	// DefaultHMACKeyEnv names the environment variable of the HMAC key for
	// skills without identity.hmac_key_env/file (the gateway's
	// skills.identity_key.env). With neither it nor DefaultHMACKeyFile,
	// such skills do not load unless they say identity: none.
	DefaultHMACKeyEnv string
	// DefaultHMACKeyFile is an absolute path of a file holding that key
	// instead (skills.identity_key.file).
	DefaultHMACKeyFile string
	// MaxResponseBytes caps the response body a call returns, default
	// DefaultMaxResponseBytes.
	MaxResponseBytes int

	// Async hands out per-call callback URLs for async skills. Nil: calls
	// of async skills fail with ErrMisconfigured.
	Async AsyncRegistrar
	// Files gives skills with files: true the URLs of the attachments of
	// the message a call is made for (sent as X-Hermes-Files). Nil: calls
	// of such skills fail with ErrMisconfigured.
	Files FileIssuer
	// CommandAllowList holds the absolute paths of the programs command
	// skills and stdio MCP servers may run. A skill naming another program
	// fails NewRegistry. Default: none.
	CommandAllowList []string
	// MCP caches MCP sessions per server. Share one across reloads (the
	// gateway creates it at start and closes it at shutdown). Nil: the
	// registry makes its own, closed by Registry.Close.
	MCP *MCPClients
	// Sleep waits between retry attempts; it must return early with the
	// context's error. Default: a timer. Tests record the waits instead.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxParallel bounds the concurrent calls of one Route request,
	// default DefaultMaxParallel.
	MaxParallel int
	// Logger receives circuit breaker state changes. Default slog.Default().
	Logger *slog.Logger
	// OnBreakerChange, if set, is told every change of a skill's circuit
	// breaker: from and to are "closed", "open" or "half-open" (as
	// Registry.BreakerState names them), at is Now's time of the change.
	// The console marks the openings from it (store.BreakerRecorder).
	// It is called inside the breaker's lock, during the skill call that
	// caused the change (or the BreakerState read that noticed open_for
	// had passed), so every call of that skill waits for it: it must not
	// block (no database write in line; hand the event off and return).
	OnBreakerChange func(skill, from, to string, at time.Time)
}

// Registry holds the validated skills and binds them to callers. It is safe
// for concurrent use. Replace a whole registry to change skills (see Live).
type Registry struct {
	skills []*Skill // sorted by name: the tool list must be byte-stable
	byName map[string]*Skill
	// specs are the skills' Specs, made once: every run reads each
	// bound tool's Spec several times, and making it anew (the description
	// joined with the usage notes) was 12 KB of garbage per run.
	specs    map[*Skill]*Spec
	breakers map[string]*gobreaker.CircuitBreaker[Result]
	opts     Options
	ownMCP   bool // opts.MCP was made here and is closed by Close
}

// NewRegistry validates defs (defaults filled in copies; defs are not
// changed) and returns a registry.
//
// Errors: a skill that fails the SKILL.md rules (*LoadError naming its file
// and field), duplicate names, a path endpoint without a valid
// Options.BaseURL, a program not in Options.CommandAllowList, or a fallback
// that does not exist or has a fallback itself. Missing secrets are not
// errors here, since they may be injected after start; see CheckEnv.
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
	if opts.Sleep == nil {
		opts.Sleep = Sleep
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = DefaultMaxParallel
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("skills: base URL %q must be an absolute http(s) URL", opts.BaseURL)
		}
	}
	if opts.DefaultHMACKeyEnv != "" || opts.DefaultHMACKeyFile != "" {
		if err := checkSecretSource(opts.DefaultHMACKeyEnv, opts.DefaultHMACKeyFile, "env", "file"); err != nil {
			return nil, fmt.Errorf("skills: default identity key: %w", err)
		}
	}
	r := &Registry{opts: opts, byName: map[string]*Skill{}, breakers: map[string]*gobreaker.CircuitBreaker[Result]{}}
	var errs []error
	for _, def := range defs {
		s := def.clone()
		file := cmp.Or(s.File, s.Name)
		if err := s.normalize(); err != nil {
			errs = append(errs, asLoadErrors(file, err, s.lines))
			continue
		}
		if _, dup := r.byName[s.Name]; dup {
			errs = append(errs, fmt.Errorf("skills: duplicate skill name %q", s.Name))
			continue
		}
		if err := r.checkPlacement(s); err != nil {
			errs = append(errs, &LoadError{File: file, Line: s.line(err.field), Field: err.field, Err: err.err})
			continue
		}
		r.byName[s.Name] = s
		r.skills = append(r.skills, s)
	}
	for _, s := range r.skills {
		if s.Fallback == "" {
			continue
		}
		fb, ok := r.byName[s.Fallback]
		switch {
		case !ok:
			errs = append(errs, &LoadError{File: cmp.Or(s.File, s.Name), Line: s.line("fallback"), Field: "fallback",
				Err: fmt.Errorf("skill %q does not exist", s.Fallback)})
		case fb.Fallback != "":
			errs = append(errs, &LoadError{File: cmp.Or(s.File, s.Name), Line: s.line("fallback"), Field: "fallback",
				Err: fmt.Errorf("skill %q has a fallback itself; chains are not supported", s.Fallback)})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(r.skills, func(a, b *Skill) int { return cmp.Compare(a.Name, b.Name) })
	r.specs = make(map[*Skill]*Spec, len(r.skills))
	for _, s := range r.skills {
		spec := s.Spec()
		r.specs[s] = &spec
		if s.Breaker != nil {
			r.breakers[s.Name] = r.newBreaker(s)
		}
	}
	if r.opts.MCP == nil {
		r.opts.MCP, r.ownMCP = NewMCPClients(), true
	}
	return r, nil
}

// LoadRegistry loads every skill of fsys and builds a registry, refusing
// the whole set if any definition is broken: the builder for Live.Reload.
// Errors are LoadDir's and NewRegistry's.
func LoadRegistry(fsys fs.FS, opts Options) (*Registry, error) {
	defs, err := LoadDir(fsys)
	if err != nil {
		return nil, err
	}
	return NewRegistry(defs, opts)
}

// checkPlacement checks what depends on the options: base URL, the
// command allow-list (resolving the program once, for good) and a key to
// sign the identity with.
func (r *Registry) checkPlacement(s *Skill) *fieldError {
	if s.Endpoint != "" && isPath(s.Endpoint) && r.opts.BaseURL == "" {
		return &fieldError{field: "endpoint", err: fmt.Errorf("%q is a path but no base URL is configured", s.Endpoint)}
	}
	for field, prog := range map[string]string{"command.path": commandPath(s), "mcp.command": mcpCommand(s)} {
		if prog == "" {
			continue
		}
		resolved, err := allowedProgram(prog, r.opts.CommandAllowList)
		if err != nil {
			return &fieldError{field: field, err: err}
		}
		s.program = resolved
	}
	if _, env, file := r.hmacKeySource(s); env == "" && file == "" && !s.Identity.None {
		return &fieldError{field: "identity", err: errUnsigned}
	}
	return nil
}

func commandPath(s *Skill) string {
	if s.Command != nil {
		return s.Command.Path
	}
	return ""
}

func mcpCommand(s *Skill) string {
	if s.MCP != nil {
		return s.MCP.Command
	}
	return ""
}

// clone copies a definition deeply enough that normalize's defaults do not
// reach the caller's value.
func (s *Skill) clone() *Skill {
	c := *s
	c.ParameterMap = maps.Clone(s.ParameterMap)
	c.QueryParams = slices.Clone(s.QueryParams)
	c.SuccessStatus = slices.Clone(s.SuccessStatus)
	c.Retry.On = slices.Clone(s.Retry.On)
	c.Access = Access{Corps: slices.Clone(s.Access.Corps), Channels: slices.Clone(s.Access.Channels),
		Accounts: slices.Clone(s.Access.Accounts), Users: slices.Clone(s.Access.Users),
		Departments: slices.Clone(s.Access.Departments), Chats: slices.Clone(s.Access.Chats)}
	c.Breaker, c.Auth, c.Confirm = clonePtr(s.Breaker), clonePtr(s.Auth), clonePtr(s.Confirm)
	if c.MCP = clonePtr(s.MCP); c.MCP != nil {
		c.MCP.Args = slices.Clone(s.MCP.Args)
	}
	if c.Command = clonePtr(s.Command); c.Command != nil {
		c.Command.Argv = slices.Clone(s.Command.Argv)
	}
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// Skills returns the validated skills, sorted by name. Do not modify them.
func (r *Registry) Skills() []*Skill { return slices.Clone(r.skills) }

// Spec is the Spec (the safe fields) of the skill named name, or one with
// only the name when there is none: a caller naming a skill it called
// before (a confirmation, a report) may find it removed meanwhile.
func (r *Registry) Spec(name string) Spec {
	if s, ok := r.byName[name]; ok {
		return *r.specs[s]
	}
	return Spec{Name: name}
}

// Close releases the MCP sessions the registry opened itself (none when
// Options.MCP was given). Calls after Close reconnect.
func (r *Registry) Close() error {
	if r.ownMCP {
		return r.opts.MCP.Close()
	}
	return nil
}

// ToolsFor binds every skill the caller may use, sorted by name. A bound
// tool's Call is Registry.Call for that caller and skill.
func (r *Registry) ToolsFor(c Caller) []Tool {
	var tools []Tool
	for _, s := range r.skills {
		if allowed(s, c) {
			tools = append(tools, &boundTool{reg: r, skill: s, spec: r.specs[s], caller: c})
		}
	}
	return tools
}

// boundTool is a skill bound to one caller.
type boundTool struct {
	reg    *Registry
	skill  *Skill
	spec   *Spec // the registry's, made once
	caller Caller
}

func (t *boundTool) Spec() Spec { return *t.spec }

// Call runs the skill for the bound caller; see Registry.Call.
func (t *boundTool) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	return t.reg.call(ctx, t.skill, t.caller, args, false)
}

// Sleep waits d, or until ctx ends, and then returns context.Cause(ctx).
// It is the one sleep-with-a-context of Hermes: skill retries, the
// agent's model retries and the gateway's loops all wait with it (skills
// is the package every one of them may import).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
