package skills

import (
	"context"
	"encoding/json"
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
}

// Spec is what the model is shown about a tool.
type Spec struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments object
}

// Tool is a skill bound to one caller: the only thing the agent can run.
// Call errors are reported to the model as text; they never carry secrets.
type Tool interface {
	Spec() Spec
	Call(ctx context.Context, args json.RawMessage) (string, error)
}
