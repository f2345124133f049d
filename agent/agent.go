package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/skills"
)

// Model is an OpenAI-compatible chat model. Tools travel in each request.
type Model interface {
	Chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error)
}

// Streamer is implemented by a Model that can stream its answer. Run uses it
// when Options.Progress is set: onDelta receives each piece of assistant
// text as it arrives, and the returned response is the assembled whole,
// shaped like Chat's (content, tool calls, finish reason, usage).
type Streamer interface {
	ChatStream(ctx context.Context, req openai.ChatCompletionRequest, onDelta func(text string)) (openai.ChatCompletionResponse, error)
}

// Message is one earlier message of the conversation, as the caller
// keeps it: who said it and its text. The agent owns this type; the
// model's wire types stay inside the agent.
type Message struct {
	Role    string // RoleUser or RoleAssistant
	Content string
}

// The roles of a Message.
const (
	RoleUser      = openai.ChatMessageRoleUser
	RoleAssistant = openai.ChatMessageRoleAssistant
)

// Image is one picture the user sent.
type Image struct {
	URL string // a data: URL (data:image/png;base64,...)
}

// imageTokens estimates what one image costs in a prompt (OpenAI bills a
// 1024×1024 image at 765 tokens with detail "auto"; other providers are
// in that range): the budget counts it, the endpoint reports the truth.
const imageTokens = 800

// Notes are the user's notes for one run: Heading (the deployment's
// words, trusted) says what they are; Items are the notes themselves, in
// the user's words, each rendered as a JSON string so that nothing in one
// can close the block they stand in.
type Notes struct {
	Heading string
	Items   []string
}

// Turn is the input of one run.
type Turn struct {
	SessionID    string
	RunID        string
	SystemPrompt string
	History      []Message // earlier turns, oldest first
	UserText     string
	// Notes are what Hermes remembers of the user that bears on this
	// message (long-term memory, gateway/memory). They are the user's
	// data, not instructions: they travel in the user's message, before
	// the request, fenced so that no note can end the fence. Empty: none.
	Notes Notes
	// Images are the pictures of the user's message, in order, for a model
	// that sees images; UserText marks where each stood. Every model call
	// of the run sends them with the user's text; the history and a stored
	// continuation keep the text only.
	Images []Image
	// Tools are the skills this user may use; the gateway has removed the
	// others. Run offers the model only those relevant to the turn (see
	// offer.go).
	Tools []skills.Tool
	// BoundTools names skills bound to this chat; they are offered on every
	// turn, like Triggers.Always.
	BoundTools []string
	// RecentTools names the skills the session's previous run called (or
	// was offered); they stay on offer so a follow-up such as 「那上个月呢」
	// can use them. Optional: without it the previous user message in
	// History is matched again, which finds the same skills in most cases.
	RecentTools []string
	// Resume continues a task that stopped with StopNeedsInput (or
	// StopAwaitingConfirmation): set it to that run's Result.Continuation and
	// UserText to the user's answer. SystemPrompt and History are then taken
	// from the continuation, so the conversation stays byte-identical.
	Resume *Continuation
}

// Options are the budgets and knobs of one run. The zero value is usable.
type Options struct {
	// Model name sent to the endpoint; empty: the Model's default.
	Model string
	// MaxSteps is the model calls allowed per task, default 6. With a plan
	// of several subtasks each subtask has this budget; argument-correction
	// retries (MaxArgRetries) do not count against it.
	MaxSteps int
	// Timeout is the wall clock of the whole run, default 90s.
	Timeout time.Duration
	// MaxObservationBytes caps what the model sees of one tool result,
	// default 8 KiB. JSON is shrunk structurally and stays valid JSON.
	MaxObservationBytes int
	// Now is the clock of step times and latencies in the trace, default
	// time.Now. Parallel tool calls read it concurrently.
	Now func() time.Time
	// Messages are the texts shown to the chat user; empty fields use
	// DefaultMessages().
	Messages Messages
	// Logger, default slog.Default(). Lines carry session_id and run_id.
	Logger *slog.Logger

	// MaxTools caps the skills offered in full per turn, default 8. A
	// catalog of at most MaxTools skills is offered whole when the user's
	// text matches none of them well.
	MaxTools int
	// IndexTokens: when not every skill is offered in full, the system
	// prompt carries an index (index.go): one line per skill while that
	// costs at most this many tokens, default 600 (about 40 skills with
	// display names), else a short index of the catalog's areas whose cost
	// does not grow with the catalog, and load_skills searches it.
	// Negative: an index of areas, only when the match is in doubt. It
	// sits in the system prompt, which is byte-stable for a user, so
	// endpoints with prompt caching bill it at the cached rate after the
	// first turn.
	IndexTokens int
	// Colloquial adds to the table of colloquial words offering expands
	// (colloquial.go): a word employees use → the words skills are
	// written with, e.g. "撤" → ["撤销", "取消"]. At most 512 entries.
	Colloquial map[string][]string
	// MaxArgRetries is how often in a row the model may correct arguments
	// that failed validation without using a step, default 2; negative:
	// never.
	MaxArgRetries int
	// MaxRepeats is how often the same tool may be called with the same
	// normalised arguments in one task; one more stops with StopRepeated.
	// Default 2.
	MaxRepeats int
	// MaxIdleRounds: consecutive idle rounds that stop the task with
	// StopIdle, default 3. A round is idle when the model called tools and
	// none of those calls was a successful skill call (2xx or accepted
	// async work); built-in tools and failed, refused, invalid or unknown
	// calls do not count as success. A text answer is not a round.
	MaxIdleRounds int
	// MaxToolFailures: after this many "unavailable" failures (5xx,
	// timeout) a skill is withdrawn for the rest of the run, default 2.
	MaxToolFailures int
	// MaxInputTokens is the token budget of the system prompt (with the
	// skill index) plus the user's text, default 4096. The user's text is
	// cut to what remains, but never below 256 tokens.
	MaxInputTokens int
	// ContextWindow of the model in tokens, default 32768. Past
	// CompressRatio of it, older observations are compressed.
	ContextWindow int
	// CompressRatio, default 0.7.
	CompressRatio float64
	// KeepRecentSteps are the last tool rounds kept verbatim when
	// compressing, default 3.
	KeepRecentSteps int
	// Archive keeps compressed observations; nil: in memory for the run.
	Archive Archive
	// Plan turns the request into goal, constraints, output format and
	// subtasks before the loop (one extra model call). Default false.
	Plan bool
	// MaxSubtasks a plan may have, default 4.
	MaxSubtasks int
	// Progress receives events (model text as it streams, tool start and
	// end, stages). It is called from the run's goroutine and, for
	// parallel tool calls, from several goroutines, one call at a time.
	// It must not block. Setting it turns on streaming for a Streamer.
	Progress func(Event)
	// ModelAttempts per model call when the endpoint answers 5xx or times
	// out, default 3. A 429 that waiting cures is not counted: it is
	// retried until the run's deadline, waiting at least its Retry-After
	// (RetryAfterError).
	ModelAttempts int
	// Backoff is the first retry delay, doubled per attempt and jittered
	// to between half and all of it; default 1s.
	Backoff time.Duration
	// Sleep waits between model attempts; default a timer that returns
	// ctx's error early. Tests inject one that records the delays.
	Sleep func(ctx context.Context, d time.Duration) error
	// CallTimeout bounds one model attempt, default 60s, and never more
	// than what is left of Timeout.
	CallTimeout time.Duration
	// ToolsInText sends no native tools and asks the model to write calls
	// as JSON in its text, for endpoints without function calling; calls
	// are then taken from anywhere in the text. In native mode a call
	// written in the text counts only when the whole message is calls: a
	// JSON object inside prose may be quoted data and never runs.
	ToolsInText bool
}

// Defaults of Options.
const (
	DefaultMaxSteps            = 6
	DefaultTimeout             = 90 * time.Second
	DefaultMaxObservationBytes = 8 << 10
	DefaultMaxTools            = 8
	DefaultIndexTokens         = 600
	DefaultMaxArgRetries       = 2
	DefaultMaxRepeats          = 2
	DefaultMaxIdleRounds       = 3
	DefaultMaxToolFailures     = 2
	DefaultMaxInputTokens      = 4096
	DefaultContextWindow       = 32768
	DefaultCompressRatio       = 0.7
	DefaultKeepRecentSteps     = 3
	DefaultMaxSubtasks         = 4
	DefaultModelAttempts       = 3
	DefaultBackoff             = time.Second
	DefaultCallTimeout         = 60 * time.Second
)

// Stop reasons recorded on a run. Each but StopFinished has a sentinel
// error (errors.go) in Result.Cause.
const (
	StopFinished = "finished"
	StopMaxSteps = "max_steps"
	StopTimeout  = "timeout"
	// StopRepeated: the same call with the same arguments beyond MaxRepeats.
	StopRepeated = "repeated_call"
	// StopIdle: MaxIdleRounds rounds in a row without a successful call.
	StopIdle = "idle"
	// StopFatalTool: a tool failed in a way retrying cannot fix
	// (misconfigured, no caller, HTTP 401, or an error wrapping ErrFatalTool).
	StopFatalTool = "fatal_tool_error"
	// StopNeedsInput: a skill asked for more information; Reply is the
	// question and Result.Continuation resumes the task.
	StopNeedsInput = "needs_input"
	// StopAwaitingConfirmation: a skill must be confirmed by the user;
	// nothing was executed. See Result.PendingConfirmation.
	StopAwaitingConfirmation = "awaiting_confirmation"
	// StopPlanRefused: the plan stage could not make sense of the request.
	StopPlanRefused = "plan_refused"
	StopError       = "error"
	// StopCanceled: the caller's context was canceled (shutdown). The gateway
	// should retry the job rather than send the partial reply.
	StopCanceled = "canceled"
)

// Step kinds.
const (
	StepModel = "model"
	StepTool  = "tool"
)

// Stages a model step can belong to (Step.Stage); empty is the main loop.
const (
	StagePlan    = "plan"
	StageCompose = "compose" // joining the subtasks' results
	StageFormat  = "format"  // asked to fix the answer's format
)

// Step is one entry of the run trace: a model call or a tool call. It is
// stored as JSON by the gateway.
type Step struct {
	N                int    // model call number, 1-based; a tool call shares its model call's N
	Kind             string // StepModel or StepTool
	Tool             string `json:",omitempty"`
	CallID           string `json:",omitempty"` // tool_call_id pairing a tool step with its request
	Args             string `json:",omitempty"` // secrets masked
	Observation      string `json:",omitempty"` // start of what the model saw (at most 2 KiB)
	Error            string `json:",omitempty"`
	Content          string `json:",omitempty"` // model text, when it answered
	PromptTokens     int
	CompletionTokens int
	At               time.Time // when the call started, from Options.Now; for a tool call that never ran, when it was refused
	Latency          time.Duration

	Stage   string `json:",omitempty"` // StagePlan, StageCompose, StageFormat; empty: main loop
	Subtask int    `json:",omitempty"` // 1-based subtask of a plan, when there are several
	// Retry is k when this model call is the k-th argument-correction retry.
	Retry int `json:",omitempty"`
	// Attempts of a model call, when the endpoint had to be retried.
	Attempts int `json:",omitempty"`
	// FailedAttempts are the errors of the attempts that were retried
	// ("attempt 1: ... 503 ..."); the last attempt's error is Error.
	FailedAttempts []string `json:",omitempty"`
	// RequestedTool is the name the model wrote when it was corrected to Tool.
	RequestedTool string `json:",omitempty"`
	// Delta lists what changed in the run's state at this step, e.g.
	// "input truncated: 9000 → 3500 tokens", "tools withdrawn: x",
	// "compressed 3 observations".
	Delta []string `json:",omitempty"`
}

// Result is the outcome of one run.
type Result struct {
	Reply      string // what to send to the chat; an honest partial answer unless StopFinished
	StopReason string // one of the Stop* constants
	// Cause is the stop's sentinel error (errors.Is(res.Cause, ErrIdle)),
	// wrapping details; nil when finished.
	Cause            error `json:"-"`
	Steps            []Step
	PromptTokens     int // summed over model calls
	CompletionTokens int
	// InputTruncated reports that the user's text was cut to the token budget.
	InputTruncated bool
	// Plan is the plan stage's outcome, when Options.Plan was set.
	Plan *Plan
	// Subtasks reports each subtask of a plan with several.
	Subtasks []SubtaskResult
	// PendingConfirmation is set with StopAwaitingConfirmation.
	PendingConfirmation *PendingConfirmation
	// Continuation is set with StopNeedsInput and StopAwaitingConfirmation:
	// store it (it is JSON) and pass it back in Turn.Resume.
	Continuation *Continuation
	// AsyncTasks are backend tasks that were started and will report later.
	AsyncTasks []AsyncStarted
	// Choices are the options a backend offered with its question
	// (StopNeedsInput; "options" beside "question" in its JSON answer),
	// masked like the reply, which lists them too: a channel with cards
	// shows them as buttons, and a tap answers as if the option were typed.
	Choices []string
}

// PendingConfirmation is a call waiting for the user's 「确认」. Nothing was
// executed; the gateway runs it once the user confirms.
type PendingConfirmation struct {
	Tool   string
	Args   json.RawMessage
	Prompt string
}

// AsyncStarted is work a skill's backend accepted during the run.
type AsyncStarted struct {
	Tool   string
	TaskID string
}

// Event kinds of Options.Progress.
const (
	EventModelDelta = "model_delta" // Text: the next piece of model text
	EventToolStart  = "tool_start"  // Tool is about to run
	EventToolDone   = "tool_done"   // Tool returned; Error set when it failed
	EventStage      = "stage"       // Text: "plan", "subtask 2/3", "compress", "format", "compose"
)

// Event is a progress report a channel may show while the run goes on.
// Model text in events is masked like the reply but is only a preview: the
// final Result.Reply can differ (templates, format fixes).
type Event struct {
	Kind string
	Text string `json:",omitempty"`
	Tool string `json:",omitempty"`
	// ToolDisplay is the tool's display name, what users call it
	// (skills.Spec.DisplayName, else its name): for progress lines.
	ToolDisplay string `json:",omitempty"`
	Step        int
	Error       string `json:",omitempty"`
}
