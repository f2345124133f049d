package skills

import (
	"encoding/json"
	"text/template"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Executors a skill can name.
const (
	ExecutorHTTP    = "http"    // an HTTP API (the default)
	ExecutorMCP     = "mcp"     // a tool on an MCP server, streamable HTTP or stdio
	ExecutorCommand = "command" // a local program from Options.CommandAllowList
)

// Auth types a skill can name.
const (
	AuthBearer = "bearer" // Authorization: Bearer <secret>
	AuthHeader = "header" // <auth.header>: <secret>
)

// Content types an HTTP skill can send its arguments as.
const (
	ContentJSON      = "application/json"
	ContentForm      = "application/x-www-form-urlencoded"
	ContentMultipart = "multipart/form-data"
)

// Retry conditions a skill can list in retry.on.
const (
	RetryOnTimeout = "timeout" // no answer in time, or the connection failed
	RetryOn5xx     = "5xx"     // HTTP 5xx, MCP transport failure, command crash
	RetryOn429     = "429"     // HTTP 429 Too Many Requests
)

// What a skill that is not read-only allows in scheduled reports
// (SKILL.md "reports"). A read-only skill may run in any report.
const (
	// ReportsAdmin: the write runs unattended only in reports an admin
	// creates (`hermes reports add`), never in one a user made in chat.
	// The default.
	ReportsAdmin = "admin"
	// ReportsAllow: any user's report may call it on its schedule.
	ReportsAllow = "allow"
)

// Defaults applied to a skill definition when a field is left out.
const (
	DefaultMethod  = "POST"
	DefaultTimeout = 10 * time.Second
	// MaxTimeout bounds a skill's timeout: a chat user is waiting and the
	// agent run has its own wall clock (90s by default).
	MaxTimeout = 2 * time.Minute

	DefaultRetryAttempts   = 3 // when a retry section is present without max_attempts
	DefaultRetryBackoff    = 200 * time.Millisecond
	DefaultRetryMaxBackoff = 5 * time.Second
	MaxRetryAttempts       = 10

	DefaultBreakerFailures = 3
	DefaultBreakerOpenFor  = 5 * time.Minute

	DefaultMaxOutputBytes = 64 << 10 // command executor stdout cap
)

// defaultParameters is the schema of a skill that takes no arguments. Models
// expect an object schema even then.
var defaultParameters = json.RawMessage(`{"properties":{},"type":"object"}`)

// Skill is one validated skill definition. LoadDir fills it from SKILL.md;
// code may also build one and pass it to NewRegistry, which validates it.
// A Skill must not be changed after it is passed to NewRegistry. README.md
// documents every field with its SKILL.md name.
type Skill struct {
	Name        string          // ^[a-z][a-z0-9_]{0,63}$, the tool name the model sees
	Description string          // when to use it and when not to
	Usage       string          // Markdown body of SKILL.md, appended to the description
	Parameters  json.RawMessage // JSON Schema of the arguments object; default: no arguments
	Executor    string          // ExecutorHTTP (default), ExecutorMCP or ExecutorCommand

	// HTTP (and MCP over streamable HTTP: Endpoint only).
	Endpoint      string            // absolute http(s) URL, or a path joined to Options.BaseURL; {name} segments are filled from arguments
	Method        string            // HTTP method, default POST
	ContentType   string            // ContentJSON (default), ContentForm or ContentMultipart
	ParameterMap  map[string]string // model's argument name → the API's name (top-level arguments; also MCP)
	QueryParams   []string          // API names sent in the query string even for POST/PUT/PATCH
	SuccessStatus []int             // statuses that count as success; default any 2xx

	Timeout  time.Duration  // per attempt, default 10s, at most MaxTimeout
	Retry    RetryPolicy    // default: one attempt
	Breaker  *BreakerPolicy // nil: no circuit breaker
	Fallback string         // skill to call instead while the breaker is open
	Auth     *Auth          // credentials of the skill itself; nil: none
	Identity IdentityConfig // how the caller's identity is signed
	Access   Access         // who may use the skill; empty: everyone

	// Confirm: nil means not set (Check warns for write-ish skills);
	// Required false says explicitly that no confirmation is needed.
	Confirm *ConfirmPolicy
	Async   bool // the backend answers 202 {task_id} and POSTs an AsyncCallback later
	// Files: the request carries the URLs of the attachments of the
	// message the call is made for (HeaderFiles), from Options.Files.
	// HTTP skills only.
	Files bool

	// ReadOnly says calls change nothing, so the agent may run an identical
	// call again. Default false: the skill is treated as a write, which runs
	// at most once per identical call in a run and carries an
	// Idempotency-Key across runs.
	ReadOnly bool
	// Reports says whether a write may run in reports users create in
	// chat: ReportsAdmin (default) or ReportsAllow.
	Reports string
	// Personal says the skill answers with the caller's own records
	// (SKILL.md "personal"): the backend answers for the verified sender
	// only, whatever the arguments say. nil: not said; the agent infers
	// it from the description (→ Spec.Personal).
	Personal *bool

	// Hints for the agent, copied into Spec.
	DisplayName      string   // what users call the skill, e.g. 「假期余额查询」; default Name
	Synonyms         []string // words employees use for what it does; offering matches them like triggers
	ResponseTemplate string
	Triggers         Triggers
	Examples         []string
	ParallelSafe     bool
	SafeFields       []string

	MCP     *MCPConfig     // executor mcp
	Command *CommandConfig // executor command

	File string // where the definition came from, for error messages

	lines       map[string]int       // YAML line of each field, for Check
	args        *jsonschema.Resolved // compiled Parameters, set by normalize
	confirmTmpl *template.Template   // compiled Confirm.Prompt
	argvTmpl    []*template.Template // compiled Command.Argv
	endOfOpts   int                  // index in argvTmpl before which "--" goes; -1: none
	program     string               // Command.Path or MCP.Command resolved (symlinks evaluated) and allow-listed; what runs
}

// RetryPolicy says when an attempt is repeated. Waits grow exponentially
// from Backoff (doubling, capped at MaxBackoff), randomised by Jitter.
type RetryPolicy struct {
	MaxAttempts int           // attempts including the first; default 1 (3 when a retry section is given), at most 10
	Backoff     time.Duration // wait before the second attempt, default 200ms
	MaxBackoff  time.Duration // cap of one wait, default 5s
	Jitter      float64       // randomisation factor in [0,1]: a wait w becomes w±Jitter·w; default 0
	On          []string      // RetryOnTimeout, RetryOn5xx, RetryOn429; default all three
}

// BreakerPolicy configures the skill's circuit breaker, shared by all
// callers: after Failures consecutive failed attempts (5xx, timeouts,
// network errors) it opens and refuses calls for OpenFor, then lets one
// probe through (half-open); the probe's success closes it.
type BreakerPolicy struct {
	Failures int           // default 3
	OpenFor  time.Duration // default 5m
}

// Auth is how Hermes authenticates itself to a skill's backend. The secret
// lives in the environment or a secret file, never in the definition, so
// definitions can be committed and shown in the console. It is read at every
// call, so rotation needs no restart.
type Auth struct {
	Type      string // AuthBearer or AuthHeader
	Header    string // header name for AuthHeader, e.g. X-Api-Key
	TokenEnv  string // environment variable holding the secret
	TokenFile string // or: a file holding it (trailing whitespace trimmed)
}

// IdentityConfig says how the caller's identity is signed. One key per
// skill or per backend: a key shared by unrelated backends lets each of
// them forge requests to the others.
type IdentityConfig struct {
	// HMACKeyEnv names the environment variable holding the HMAC key for
	// X-Hermes-Signature. Empty (and no HMACKeyFile): the gateway's default
	// key (Options.DefaultHMACKeyEnv or DefaultHMACKeyFile); with none of
	// them the skill does not load unless None is set.
	HMACKeyEnv string
	// HMACKeyFile is a file holding the key instead (e.g. a mounted secret).
	HMACKeyFile string
	// None (SKILL.md "identity: none") sends the identity unsigned, by
	// explicit choice: the backend cannot trust it.
	None bool
}

// Access says who may use a skill. An empty Access lets everyone use it.
// Otherwise a caller passes when their corp is in Corps (required: ids
// are only unique within a corp), their channel in Channels and their
// account in Accounts (each when given), and (Users and Departments are
// both empty, or the caller is in Users, or one of the caller's
// departments is in Departments) and (Chats is empty or the conversation
// is in Chats).
type Access struct {
	Corps       []string // Caller.CorpID values; required when anything else is set
	Channels    []string // Caller.Channel values (wecom, dingtalk...); empty: any
	Accounts    []string // Caller.Account values (configured app names); empty: any
	Users       []string // Caller.UserID values
	Departments []string // Caller.Depts values
	Chats       []string // Caller.ChatID values
}

// ConfirmPolicy makes a skill wait for the user's confirmation.
type ConfirmPolicy struct {
	Required bool
	// Prompt is a Go text/template over {.Args, .Caller, .Skill} telling the
	// user exactly what will happen, e.g. "重置 {{.Caller.UserID}} 的 VPN 密码".
	// Default: the skill name and the arguments as JSON.
	Prompt string
}

// MCPConfig names the MCP tool and, for stdio servers, the server program.
// A streamable HTTP server is given by Skill.Endpoint instead of Command.
type MCPConfig struct {
	Tool    string   // tool name on the server, default the skill name
	Command string   // absolute path of a stdio server, must be in Options.CommandAllowList
	Args    []string // its arguments, literal: one process serves every caller
}

// CommandConfig is a local program run without a shell.
type CommandConfig struct {
	Path string // absolute path, must be in Options.CommandAllowList
	// Argv are the arguments after the program name, each a Go
	// text/template over {.Args, .Caller, .Skill}; each renders to exactly
	// one argument, whatever it contains.
	Argv           []string
	MaxOutputBytes int // stdout cap, default DefaultMaxOutputBytes; more is an error
	// NoEndOfOptions (SKILL.md "end_of_options: false") keeps Hermes from
	// inserting "--" before the first argument that renders the model's
	// arguments. Without "--" a value starting with "-" becomes an option
	// of the program; `hermes skills check` warns.
	NoEndOfOptions bool
}

// Spec is what the agent knows about this skill: the description with the
// usage notes appended, and the presentation hints.
func (s *Skill) Spec() Spec {
	desc := s.Description
	if s.Usage != "" {
		desc += "\n\n" + s.Usage
	}
	return Spec{
		Name:             s.Name,
		DisplayName:      s.DisplayName,
		Description:      desc,
		Synonyms:         s.Synonyms,
		ReadOnly:         s.ReadOnly,
		Parameters:       s.Parameters,
		Examples:         s.Examples,
		Triggers:         s.Triggers,
		ParallelSafe:     s.ParallelSafe,
		ResponseTemplate: s.ResponseTemplate,
		SafeFields:       s.SafeFields,
		Confirm:          s.Confirm != nil && s.Confirm.Required,
		Async:            s.Async,
		ReportsAllowed:   s.ReadOnly || s.Reports == ReportsAllow,
		Personal:         s.Personal,
	}
}

// needsConfirm reports whether calls wait for the user's confirmation.
func (s *Skill) needsConfirm() bool { return s.Confirm != nil && s.Confirm.Required }
