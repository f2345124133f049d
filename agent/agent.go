// Package agent runs one conversational turn: a plain loop that asks the model,
// runs the tools it calls (skills bound to the caller by the gateway) and stops
// with an answer or an explicit stop reason. It knows nothing of SQL, HTTP
// servers or chat platforms.
package agent

import (
	"context"
	"log/slog"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/skills"
)

// Model is an OpenAI-compatible chat model. Tools travel in each request.
type Model interface {
	Chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error)
}

// Turn is the input of one run.
type Turn struct {
	SessionID    string
	RunID        string
	SystemPrompt string
	History      []openai.ChatCompletionMessage // earlier turns, text only, oldest first
	UserText     string
	Tools        []skills.Tool
}

// Options are the budgets and knobs of one run. The zero value is usable.
type Options struct {
	Model               string           // model name sent to the endpoint; empty: the Model's default
	MaxSteps            int              // model calls per run, default 6
	Timeout             time.Duration    // wall clock for the whole run, default 90s
	MaxObservationBytes int              // tool output (or error) the model sees per call, default 8 KiB
	Now                 func() time.Time // clock for step times and latencies in the trace, default time.Now
	Messages            Messages         // texts shown to the chat user; empty fields use DefaultMessages()
	Logger              *slog.Logger     // default slog.Default()
}

// Defaults of Options.
const (
	DefaultMaxSteps            = 6
	DefaultTimeout             = 90 * time.Second
	DefaultMaxObservationBytes = 8 << 10
)

// Stop reasons recorded on a run.
const (
	StopFinished = "finished"
	StopMaxSteps = "max_steps"
	StopTimeout  = "timeout"
	StopError    = "error"
	// StopCanceled: the caller's context was canceled (shutdown). The gateway
	// should retry the job rather than send the partial reply.
	StopCanceled = "canceled"
)

// Step kinds.
const (
	StepModel = "model"
	StepTool  = "tool"
)

// Step is one entry of the run trace: a model call or a tool call.
type Step struct {
	N                int    // model call number, 1-based; a tool call shares its model call's N
	Kind             string // StepModel or StepTool
	Tool             string `json:",omitempty"`
	CallID           string `json:",omitempty"` // tool_call_id pairing a tool step with its request
	Args             string `json:",omitempty"`
	Observation      string `json:",omitempty"` // start of what the model saw (at most 2 KiB)
	Error            string `json:",omitempty"`
	Content          string `json:",omitempty"` // model text, when it answered
	PromptTokens     int
	CompletionTokens int
	At               time.Time // when the call started, from Options.Now
	Latency          time.Duration
}

// Result is the outcome of one run.
type Result struct {
	Reply            string // what to send to the chat; an honest partial answer unless StopFinished
	StopReason       string // one of the Stop* constants
	Steps            []Step
	PromptTokens     int // summed over model calls
	CompletionTokens int
}
