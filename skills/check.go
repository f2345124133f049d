package skills

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Severity of a Finding.
type Severity string

const (
	SeverityError   Severity = "error"   // the skill does not load
	SeverityWarning Severity = "warning" // it loads, but the setting is risky
)

// DefaultRunBudget is the agent's default run wall clock, used by Check when
// CheckOptions.RunBudget is zero.
const DefaultRunBudget = 90 * time.Second

// Finding is one problem Check found.
type Finding struct {
	File     string // path inside the checked fs.FS, e.g. "hr_leave/SKILL.md"
	Field    string // front matter field, dotted; empty for the file itself
	Line     int    // 1-based, 0 when unknown
	Severity Severity
	Message  string
}

// String formats the finding like a compiler message:
// "hr_leave/SKILL.md:5: timeout: warning: ...".
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.File)
	if f.Line > 0 {
		fmt.Fprintf(&b, ":%d", f.Line)
	}
	if f.Field != "" {
		b.WriteString(": " + f.Field)
	}
	fmt.Fprintf(&b, ": %s: %s", f.Severity, f.Message)
	return b.String()
}

// CheckOptions describe the deployment the skills will run in.
type CheckOptions struct {
	// RunBudget is the agent's wall clock per run, default DefaultRunBudget.
	RunBudget time.Duration
	// BaseURL is the gateway's skills.base_url; empty: path endpoints get
	// a warning that one is needed.
	BaseURL string
	// DefaultHMACKeyEnv is the gateway's default identity key variable.
	DefaultHMACKeyEnv string
	// CommandAllowList, when not nil, is checked like NewRegistry does;
	// nil: programs get a warning to add them.
	CommandAllowList []string
}

// Check validates every */SKILL.md of fsys and reports each error with its
// file and field, plus warnings about risky settings: a timeout longer than
// a third of the run budget, retries that can outlast the run, a write-ish
// skill without confirm, plain http:// outside loopback, no identity
// signing, a POST retried after timeouts. Findings are sorted by file and
// line; any SeverityError means LoadRegistry would refuse the set.
func Check(fsys fs.FS, opts CheckOptions) []Finding {
	if opts.RunBudget <= 0 {
		opts.RunBudget = DefaultRunBudget
	}
	var out []Finding
	if opts.BaseURL != "" {
		if u, err := url.Parse(opts.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, Finding{File: "(options)", Field: "base_url", Severity: SeverityError,
				Message: fmt.Sprintf("%q must be an absolute http(s) URL", opts.BaseURL)})
		}
	}
	defs, err := LoadDir(fsys)
	for _, e := range flatten(err) {
		var le *LoadError
		if errors.As(e, &le) {
			out = append(out, Finding{File: le.File, Field: le.Field, Line: le.Line, Severity: SeverityError, Message: le.Err.Error()})
		} else {
			out = append(out, Finding{File: ".", Severity: SeverityError, Message: e.Error()})
		}
	}
	if len(defs) == 0 && err == nil {
		out = append(out, Finding{File: ".", Severity: SeverityWarning, Message: "no */" + DefinitionFile + " found"})
	}
	byName := map[string]*Skill{}
	for _, s := range defs {
		byName[s.Name] = s
	}
	for _, s := range defs {
		c := &checker{s: s, opts: opts, byName: byName}
		c.errors()
		c.warnings()
		out = append(out, c.found...)
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return out
}

type checker struct {
	s      *Skill
	opts   CheckOptions
	byName map[string]*Skill
	found  []Finding
}

// add records a finding at the field's line, or at the skill's name when
// the field is absent (a missing confirm).
func (c *checker) add(sev Severity, field, format string, args ...any) {
	line := c.s.line(field)
	if line == 0 {
		line = c.s.line("name")
	}
	c.found = append(c.found, Finding{File: c.s.File, Field: field, Line: line, Severity: sev,
		Message: fmt.Sprintf(format, args...)})
}

// errors are what NewRegistry would refuse beyond one file's own rules.
func (c *checker) errors() {
	s := c.s
	if s.Fallback != "" {
		fb, ok := c.byName[s.Fallback]
		switch {
		case !ok:
			c.add(SeverityError, "fallback", "skill %q does not exist", s.Fallback)
		case fb.Fallback != "":
			c.add(SeverityError, "fallback", "skill %q has a fallback itself; chains are not supported", s.Fallback)
		}
	}
	for field, prog := range map[string]string{"command.path": commandPath(s), "mcp.command": mcpCommand(s)} {
		switch {
		case prog == "":
		case c.opts.CommandAllowList == nil:
			c.add(SeverityWarning, field, "%s must be in the gateway's command allow-list (skills.command_allow_list)", prog)
		case !slices.Contains(c.opts.CommandAllowList, filepath.Clean(prog)):
			c.add(SeverityError, field, "%s is not in the command allow-list", prog)
		}
	}
}

func (c *checker) warnings() {
	s, budget := c.s, c.opts.RunBudget
	if s.Timeout > budget/3 {
		c.add(SeverityWarning, "timeout", "%s is more than a third of the run budget (%s): one slow call leaves the agent no time to answer",
			s.Timeout, budget)
	}
	if worst := s.worstCase(); s.Retry.MaxAttempts > 1 && worst > budget {
		c.add(SeverityWarning, "retry.max_attempts", "%d attempts of %s each (plus waits) take up to %s, longer than the run budget (%s)",
			s.Retry.MaxAttempts, s.Timeout, worst.Round(time.Second), budget)
	}
	if s.Confirm == nil && s.isWriteish() {
		c.add(SeverityWarning, "confirm", "%s looks like it changes something but has no confirm setting: the model alone can trigger it "+
			"(add confirm: {prompt: ...}, or confirm: false to accept that)", s.Name)
	}
	if s.ReadOnly && s.isWriteish() {
		c.add(SeverityWarning, "read_only", "%s looks like it changes something but is marked read_only: the agent may run an identical call twice "+
			"and sends no Idempotency-Key", s.Name)
	}
	if s.Executor == ExecutorHTTP && methodHasBody[s.Method] && s.Retry.MaxAttempts > 1 && slices.Contains(s.Retry.On, RetryOnTimeout) {
		c.add(SeverityWarning, "retry.on", "retries a %s after a timeout: the backend may run it twice; make it idempotent or drop timeout from retry.on", s.Method)
	}
	if s.Endpoint != "" {
		target := s.Endpoint
		if isPath(target) {
			if c.opts.BaseURL == "" {
				c.add(SeverityWarning, "endpoint", "%q is a path: the gateway must set skills.base_url", s.Endpoint)
			}
			target = c.opts.BaseURL
		}
		if plainRemoteHTTP(target) {
			c.add(SeverityWarning, "endpoint", "%s is plain http:// outside loopback: identity headers and tokens travel unencrypted", target)
		}
	}
	if s.Identity.HMACKeyEnv == "" && s.Identity.HMACKeyFile == "" && c.opts.DefaultHMACKeyEnv == "" {
		c.add(SeverityWarning, "identity", "no identity signing: the backend cannot tell Hermes's headers from anyone's "+
			"(set identity.hmac_key_env)")
	}
}

// plainRemoteHTTP reports an http:// URL whose host is not loopback.
func plainRemoteHTTP(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// HasErrors reports whether any finding is an error.
func HasErrors(findings []Finding) bool {
	return slices.ContainsFunc(findings, func(f Finding) bool { return f.Severity == SeverityError })
}
