package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/skills"
)

// run is the state of one Run, kept out of the loop so the loop reads as
// the algorithm.
type run struct {
	opts  Options
	turn  Turn
	model Model
	log   *slog.Logger

	entries    []*toolEntry // offered skills, in request order
	byName     map[string]*toolEntry
	withdrawn  map[string]bool
	recallOn   bool // recall_observation is offered (something was archived)
	indexOn    bool // the skill index and load_skills are offered
	areas      bool // the index lists areas, not skills (index.go)
	chitchat   bool // the request asks for no company data (chitchat.go)
	colloquial colloquialTable
	specs      []skills.Spec // of turn.Tools, once matching needed them
	matcher    *matcher      // over specs

	subject         string        // the person other than the caller the request is about (verify.go)
	selfToo         bool          // the request asks about the caller too (我和小王的考勤): the model's subject decides each call
	answered        int           // skill calls that answered, not asked about subject
	answeredSubject bool          // a skill answered with subject in its arguments
	others          []string      // people other than the caller personal calls were about; not run (whose.go)
	ownShown        []string      // display names of personal skills that answered: the caller's own data
	corrected       bool          // the model was asked once to correct an answer
	defs            []openai.Tool // the request's tools block
	defsTok         int           // its tokens

	msgs   []openai.ChatCompletionMessage
	meta   []msgMeta // parallel to msgs
	rounds []int     // index of the first message of each tool round
	goal   string    // the user's text, normalised and budgeted

	n          int  // model calls so far: Step.N
	taskSteps  int  // model calls counted against MaxSteps in the current (sub)task
	freeNext   bool // the next model call does not count (argument retry, format fix)
	retry      int  // argument-correction retries used in a row
	idle       int  // idle rounds in a row
	repeats    map[string]int
	writes     map[string]string // callKey → result of a write that succeeded (writes.go)
	failures   map[string]int
	lastRound  []*callResult   // the skill calls of the latest tool round, for templates
	called     map[string]bool // skills called so far, for reoffer
	plan       *Plan
	sub        int // index of the current subtask
	subs       []SubtaskResult
	phase      phase
	format     formatKind
	final      string // the answer to send, once there is one
	archive    Archive
	mem        *memArchive // when archive is the in-memory one
	archiveRun string      // run id the archive is keyed by (the first run of a resumed task)
	keep       safeSet     // numbers from safe fields, left unmasked in the reply
	deltas     []string    // state changes to record on the next model step
	emitMu     sync.Mutex

	result   Result
	progress progress
}

// msgKind says what a message is to compression.
type msgKind uint8

const (
	msgOther       msgKind = iota
	msgSystem              // never changed
	msgGoal                // the user's request: never changed
	msgObservation         // tool results: may be archived and summarised
)

type msgMeta struct {
	kind     msgKind
	tokens   int
	tool     string // for observations
	archived bool
}

// perMessageTokens is the framing each message costs (role, separators) in
// OpenAI's accounting.
const perMessageTokens = 4

func (o Options) withDefaults() Options {
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&o.MaxSteps, DefaultMaxSteps}, {&o.MaxObservationBytes, DefaultMaxObservationBytes},
		{&o.MaxTools, DefaultMaxTools}, {&o.MaxRepeats, DefaultMaxRepeats},
		{&o.MaxIdleRounds, DefaultMaxIdleRounds}, {&o.MaxToolFailures, DefaultMaxToolFailures},
		{&o.MaxInputTokens, DefaultMaxInputTokens}, {&o.ContextWindow, DefaultContextWindow},
		{&o.KeepRecentSteps, DefaultKeepRecentSteps}, {&o.MaxSubtasks, DefaultMaxSubtasks},
		{&o.ModelAttempts, DefaultModelAttempts},
	} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	if o.MaxArgRetries < 0 {
		o.MaxArgRetries = 0
	} else if o.MaxArgRetries == 0 {
		o.MaxArgRetries = DefaultMaxArgRetries
	}
	if o.IndexTokens == 0 {
		o.IndexTokens = DefaultIndexTokens
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CompressRatio <= 0 || o.CompressRatio >= 1 {
		o.CompressRatio = DefaultCompressRatio
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Sleep == nil {
		o.Sleep = skills.Sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Messages = o.Messages.withDefaults()
	return o
}

// newRun prepares the turn: the user's text normalised, the skills to
// offer, the token budget. It logs "input ready". Errors: duplicate or
// reserved tool names, an unusable continuation.
func newRun(m Model, turn Turn, opts Options) (*run, error) {
	r := &run{
		opts: opts, turn: turn, model: m,
		log:       opts.Logger.With("session_id", turn.SessionID, "run_id", turn.RunID),
		withdrawn: map[string]bool{}, repeats: map[string]int{}, failures: map[string]int{}, writes: map[string]string{},
		called:  map[string]bool{},
		archive: opts.Archive, archiveRun: turn.RunID, colloquial: newColloquialTable(opts.Colloquial),
	}
	if turn.Resume != nil {
		return r, r.resume(turn.Resume)
	}
	if r.archive == nil {
		r.mem = newMemArchive(nil)
		r.archive = r.mem
	}
	text := normalizeText(turn.UserText)
	off, err := offerTools(offerInput{tools: turn.Tools, bound: turn.BoundTools, recent: turn.RecentTools,
		text: text, previous: normalizeText(previousTurn(turn.History)), limit: opts.MaxTools, indexTok: opts.IndexTokens,
		colloquial: r.colloquial})
	if err != nil {
		return r, err
	}
	r.indexOn, r.areas, r.chitchat, r.specs, r.matcher = off.index, off.areas, off.chitchat, off.specs, off.matcher
	r.setTools(off.entries)
	system := buildSystemPrompt(turn.SystemPrompt, r.entries, r.index(), opts.ToolsInText, nil)
	var note string
	r.goal, note = budgetUserText(text, system+notesBlock(turn.Notes), opts.MaxInputTokens)
	if note != "" {
		r.result.InputTruncated = true
		r.note("%s", note)
	}
	r.format = requestedFormat(r.goal, nil)
	r.setSubject(r.goal)
	r.log.Debug("agent: input ready", "user_bytes", len(turn.UserText), "normalised_bytes", len(text),
		"truncated", note != "", "tools_given", len(turn.Tools), "tools_offered", len(r.entries), "index", r.indexOn)
	return r, nil
}

// buildContext assembles the first messages: the system prompt (with the
// skill index and the plan), the session's recent turns, the user's
// text. A resumed task instead continues its stored conversation with the
// user's answer. It logs "context built".
func (r *run) buildContext() {
	if r.turn.Resume != nil {
		answer, note := budgetUserText(normalizeText(r.turn.UserText), r.msgs[0].Content, r.opts.MaxInputTokens)
		if note != "" {
			r.result.InputTruncated = true
			r.note("%s", note)
		}
		r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: answer}, msgOther, "")
	} else {
		system := buildSystemPrompt(r.turn.SystemPrompt, r.entries, r.index(), r.opts.ToolsInText, r.plan)
		r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: system}, msgSystem, "")
		for _, h := range textHistory(r.turn.History) {
			r.appendMsg(h, msgOther, "")
		}
		r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: r.goal}, msgGoal, "")
		r.meta[len(r.meta)-1].tokens += len(r.turn.Images)*imageTokens + countTokens(notesBlock(r.turn.Notes))
	}
	r.log.Debug("agent: context built", "messages", len(r.msgs), "tools", len(r.defs),
		"prompt_tokens_estimate", r.promptTokens(), "plan", r.plan != nil, "resumed", r.turn.Resume != nil)
}

// resume restores a stored task.
func (r *run) resume(c *Continuation) error {
	if c.Version != continuationVersion || len(c.Messages) == 0 || len(c.MessageKinds) != len(c.Messages) {
		return errors.New("resume: continuation is empty or of another version")
	}
	r.archiveRun = c.ArchiveRunID
	if r.archive == nil {
		r.mem = newMemArchive(c.Archived)
		r.archive = r.mem
	}
	r.setTools(toolsByName(r.turn.Tools, c.Tools))
	for _, name := range c.Withdrawn {
		r.withdrawn[name] = true
	}
	for name, n := range c.Failures {
		r.failures[name] = n
	}
	r.recallOn, r.indexOn = c.Recall, c.Index
	r.rebuildDefs()
	for i, m := range c.Messages {
		r.appendMsg(m, kindOf(c.MessageKinds[i]), "")
	}
	r.meta[0].kind = msgSystem
	r.rounds = c.Rounds
	r.plan, r.sub, r.subs, r.phase = c.Plan, c.Subtask, c.Subtasks, phase(c.Phase)
	r.format, r.n = formatKind(c.Format), c.Steps
	r.progress.done, r.progress.facts = c.ToolsDone, c.Facts
	for key, text := range c.Writes {
		r.writes[key] = text
	}
	for _, n := range c.SafeNumbers {
		r.keep.add(n)
	}
	r.result.Plan = r.plan
	r.goal = r.turn.UserText
	r.setSubject(r.goalText()) // the request's, not the answer's
	r.ownShown, r.others = c.OwnShown, c.Others
	return nil
}

// setTools installs the offered skills and builds the tools block.
func (r *run) setTools(entries []*toolEntry) {
	r.entries = entries
	r.byName = make(map[string]*toolEntry, len(entries))
	for _, e := range entries {
		r.byName[e.spec.Name] = e
	}
	r.rebuildDefs()
}

// rebuildDefs builds the tools block: the offered skills not withdrawn,
// then the built-ins. It changes only when a skill is withdrawn or the
// first observation is archived, so requests stay byte-identical otherwise.
func (r *run) rebuildDefs() {
	r.defs = r.defs[:0:0]
	for _, e := range r.entries {
		if !r.withdrawn[e.spec.Name] {
			r.defs = append(r.defs, e.def)
		}
	}
	// finish only makes sense next to skills; without any, the request
	// carries no tools at all, which endpoints without function calling
	// need.
	if len(r.entries) > 0 || r.indexOn {
		r.defs = append(r.defs, finishDef)
	}
	if r.indexOn {
		r.defs = append(r.defs, loadSkillsDef)
	}
	if r.recallOn {
		r.defs = append(r.defs, recallDef)
	}
	r.defsTok = 0
	for _, d := range r.defs {
		// The parts, not the marshalled block: the parts repeat across
		// turns and their counts are cached.
		r.defsTok += perToolTokens + countTokens(d.Function.Name) + countTokens(d.Function.Description) +
			countTokens(string(d.Function.Parameters.(json.RawMessage)))
	}
}

// perToolTokens is the framing of one function in the tools block.
const perToolTokens = 8

// index is the skill index block of the system prompt, "" when it is off.
func (r *run) index() string {
	if !r.indexOn {
		return ""
	}
	specs, m := r.catalog()
	if m == nil { // the tools were refused (offerTools said why)
		return ""
	}
	if r.areas {
		return areaIndex(specs, len(r.entries))
	}
	text, _ := m.skillIndex(specs)
	return text
}

// goalText is the user's request of the task: the goal message, which a
// resumed run keeps from the run that asked.
func (r *run) goalText() string {
	for i, m := range r.meta {
		if m.kind == msgGoal {
			return r.msgs[i].Content
		}
	}
	return ""
}

// callableNames are the names a tool call may resolve to: offered skills
// (withdrawn ones too, to say so), the built-ins on offer, and the skills
// of the index, which a call loads on the way.
func (r *run) callableNames() []string {
	names := make([]string, 0, len(r.entries)+3)
	for _, e := range r.entries {
		names = append(names, e.spec.Name)
	}
	if len(r.entries) > 0 || r.indexOn {
		names = append(names, toolFinish)
	}
	if r.indexOn {
		names = append(names, toolLoadSkills)
		names = append(names, r.indexedNames()...)
	}
	if r.recallOn {
		names = append(names, toolRecall)
	}
	return names
}

// appendMsg adds a message to the conversation. Messages are only ever
// appended; compression is the one edit to past context.
func (r *run) appendMsg(m openai.ChatCompletionMessage, kind msgKind, tool string) {
	tokens := countTokens(m.Content)
	for _, c := range m.ToolCalls {
		tokens += countTokens(c.Function.Name) + countTokens(c.Function.Arguments)
	}
	r.msgs = append(r.msgs, m)
	r.meta = append(r.meta, msgMeta{kind: kind, tokens: tokens, tool: tool})
}

// promptTokens estimates the next request's prompt: messages, framing and
// the tools block.
func (r *run) promptTokens() int {
	n := r.defsTok
	for _, m := range r.meta {
		n += m.tokens + perMessageTokens
	}
	return n
}

// note records a state change for the trace; it is attached to the next
// model step.
func (r *run) note(format string, args ...any) {
	r.deltas = append(r.deltas, fmt.Sprintf(format, args...))
}

// emit sends a progress event, one at a time even from parallel calls.
func (r *run) emit(e Event) {
	if r.opts.Progress == nil {
		return
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.opts.Progress(e)
}

// previousTurn is the last user message of history and the reply to it,
// for keeping the previous turn's skills on offer.
func previousTurn(history []Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == RoleUser {
			text := history[i].Content
			if i+1 < len(history) && history[i+1].Role == RoleAssistant {
				text += "\n" + history[i+1].Content
			}
			return text
		}
	}
	return ""
}

// textHistory is the history as the model takes it: the text of user and
// assistant turns (the model needs what was said, not system notes).
func textHistory(history []Message) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, 0, len(history))
	for _, h := range history {
		if (h.Role == RoleUser || h.Role == RoleAssistant) && h.Content != "" {
			out = append(out, openai.ChatCompletionMessage{Role: h.Role, Content: h.Content})
		}
	}
	return out
}
