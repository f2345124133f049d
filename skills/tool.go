package skills

import (
	"context"
	"encoding/json"
	"time"
)

// Caller is who a skill acts for. The gateway fills it from the verified
// platform callback; the model never sees it and cannot change it.
type Caller struct {
	UserID  string   // platform user id, e.g. "zhangsan"
	Name    string   // display name, when known
	Channel string   // "wecom", "console", ...
	Account string   // configured app / bot name
	CorpID  string   // corp / tenant id
	ChatID  string   // conversation id
	Depts   []string // department ids, when known
	TraceID string   // run id; sent to backends as X-Request-ID / traceparent
	// Origin is the inbound message the call serves, which the gateway
	// routes a later result (async skills) back to; 0 on paths without one
	// (a scheduled report, the API). Skills never read it but for the
	// idempotency key; the FileIssuer finds the message's attachments by it.
	Origin InboundID
	// FilesOf, when set, is the message whose attachments a skill that
	// takes files gets instead of Origin's: a call the user confirmed
	// with 「确认」 serves the message that asked for it.
	FilesOf InboundID
}

// FilesMessage is the message whose attachments a call of c may take.
func (c Caller) FilesMessage() InboundID {
	if c.FilesOf != 0 {
		return c.FilesOf
	}
	return c.Origin
}

// InboundID is the gateway's id of a stored inbound message.
type InboundID int64

// Spec is what the agent knows about a tool: what the model is shown, and
// the hints the agent uses to offer, run and present it.
type Spec struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments object
	Examples    []string        // example requests that should use this tool
	// DisplayName is what users call the tool (partial answers, the skill
	// index); empty: use Name.
	DisplayName string
	// Synonyms are words employees use for what the tool does; offering
	// matches them like triggers.
	Synonyms []string
	// ReadOnly says calls change nothing. A tool that is not read-only is a
	// write: the agent runs an identical call at most once per run.
	ReadOnly bool

	// Triggers decide whether the tool is relevant to a turn (seed 003's
	// intent_contains / intent_regex); Always offers it on every turn.
	Triggers Triggers
	// ParallelSafe lets the agent run this call alongside others of the
	// same step; by default calls of one step run in order.
	ParallelSafe bool
	// ResponseTemplate, when set, is a Go text/template over the decoded
	// JSON observation that renders the final answer instead of the model.
	ResponseTemplate string
	// SafeFields are observation fields the skill marks as safe to show
	// unmasked (e.g. a phone number the user asked for).
	SafeFields []string
	// Confirm says calls answer Result.Confirm until the user confirms;
	// the agent may tell the model so up front.
	Confirm bool
	// Async says the backend usually accepts the work and reports later.
	Async bool
	// ReportsAllowed says the tool may run unattended in a scheduled
	// report a user created in chat: it is read-only, or its definition
	// says `reports: allow`. Otherwise only reports an admin creates call
	// it.
	ReportsAllowed bool
	// Personal says the tool answers with the caller's own records only
	// (a payslip, a leave balance, the caller's tickets): the agent then
	// decides whose data a call is about before it runs, runs it only for
	// the caller, and labels what it shows as the caller's own. nil: not
	// said; the agent infers it from the description (agent/whose.go).
	Personal *bool
	// Documents says the tool searches the company's documents (the
	// knowledge base's knowledge_search): a question that asks how, why
	// or what something is, which asks for no record and so is offered no
	// skill (agent/chitchat.go), is still offered it, since the company's
	// rules and guides may answer it.
	Documents bool
}

// Triggers say when a tool is relevant to the user's text.
type Triggers struct {
	Always         bool
	IntentContains []string // any substring matches (case-insensitive)
	IntentRegex    []string // any RE2 expression matches
}

// Result is what one call produced. Exactly one of a backend answer
// (Status/Body), Confirm or Async describes the outcome.
type Result struct {
	Status      int           // HTTP status, or 200 for MCP/command success
	ContentType string        // media type of Body, e.g. application/json
	Body        []byte        // the answer, secrets already removed
	Duration    time.Duration // time spent in the backend (X-Execution-Time when given)

	// Confirm is set when the skill must be confirmed by the user before it
	// runs: nothing was executed; the gateway asks the user.
	Confirm *Confirmation
	// Async is set when the backend accepted the work (HTTP 202) and will
	// post the result later; the user is told the work has started.
	Async *AsyncTask

	// Skill is the skill that produced this result: the called one, or its
	// fallback.
	Skill string
	// Fallback names the fallback skill that answered because the called
	// skill's circuit breaker was open; empty when the skill itself ran.
	Fallback string
}

// Confirmation describes a call waiting for the user's 「确认」. The gateway
// keeps Skill and Args and, once the same user confirms in time, passes them
// to Registry.CallConfirmed.
type Confirmation struct {
	Prompt string          // what exactly will happen, e.g. "重置 zhangsan 的 VPN 密码"
	Skill  string          // the skill to run once confirmed (may be a fallback)
	Args   json.RawMessage // the validated arguments to run it with
}

// AsyncTask is work a backend accepted and will report later by POSTing an
// AsyncCallback to CallbackURL.
type AsyncTask struct {
	TaskID      string
	CallbackURL string // the URL AsyncRegistrar.Begin returned for this call
}

// Tool is a skill bound to one caller: the only thing the agent can run.
// Call errors are reported to the model as text; they never carry secrets.
type Tool interface {
	Spec() Spec
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}
