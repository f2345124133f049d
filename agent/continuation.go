package agent

import (
	"maps"
	"slices"

	openai "github.com/sashabaranov/go-openai"
)

// continuationVersion changes when the shape of Continuation does; an
// older continuation is refused rather than misread.
const continuationVersion = 1

// Continuation is what a task that stopped to ask the user needs to go on
// in a later run: the conversation so far, the plan and the counters. It is
// plain JSON; the gateway stores it with the session and passes it back in
// Turn.Resume together with the user's answer as Turn.UserText.
//
// It holds tool observations (already sanitised), so store it like a trace.
type Continuation struct {
	Version  int                            `json:"version"`
	Messages []openai.ChatCompletionMessage `json:"messages"`
	// MessageKinds parallels Messages: "system", "goal", "observation" or
	// "other"; compression needs to know which messages it may shorten.
	MessageKinds []string        `json:"message_kinds"`
	Rounds       []int           `json:"rounds,omitempty"` // index of the first message of each tool round
	Tools        []string        `json:"tools"`            // the skills offered
	Withdrawn    []string        `json:"withdrawn,omitempty"`
	Failures     map[string]int  `json:"failures,omitempty"`
	Recall       bool            `json:"recall,omitempty"` // recall_observation was offered
	Index        bool            `json:"index,omitempty"`  // the skill index and load_skills were offered
	Plan         *Plan           `json:"plan,omitempty"`
	Subtask      int             `json:"subtask"` // index of the current subtask
	Subtasks     []SubtaskResult `json:"subtasks,omitempty"`
	Phase        int             `json:"phase,omitempty"`
	Format       string          `json:"format,omitempty"`
	Steps        int             `json:"steps"` // model calls so far; Step.N continues from here
	ToolsDone    []string        `json:"tools_done,omitempty"`
	Facts        []string        `json:"facts,omitempty"` // facts learnt, for a partial answer
	// Writes are the writes that succeeded (call key → result), so a
	// resumed task does not run them again.
	Writes      map[string]string `json:"writes,omitempty"`
	SafeNumbers []string          `json:"safe_numbers,omitempty"`
	// OwnShown and Others are whose data the task showed and refused so
	// far (whose.go), so the reply of the resumed run says so too.
	OwnShown []string `json:"own_shown,omitempty"`
	Others   []string `json:"others,omitempty"`
	// ArchiveRunID is the run whose archive holds compressed observations;
	// Archived carries them when the archive was the in-memory one.
	ArchiveRunID string            `json:"archive_run_id"`
	Archived     map[string]string `json:"archived,omitempty"`
}

var kindNames = map[msgKind]string{msgSystem: "system", msgGoal: "goal", msgObservation: "observation", msgOther: "other"}

func kindOf(name string) msgKind {
	for k, n := range kindNames {
		if n == name {
			return k
		}
	}
	return msgOther
}

// continuation captures the run for a later Turn.Resume.
func (r *run) continuation() *Continuation {
	c := &Continuation{
		Version:      continuationVersion,
		Messages:     slices.Clone(r.msgs),
		Rounds:       slices.Clone(r.rounds),
		Failures:     maps.Clone(r.failures),
		Recall:       r.recallOn,
		Index:        r.indexOn,
		Plan:         r.plan,
		Subtask:      r.sub,
		Subtasks:     slices.Clone(r.subs),
		Phase:        int(r.phase),
		Format:       string(r.format),
		Steps:        r.n,
		ToolsDone:    slices.Clone(r.progress.done),
		Facts:        slices.Clone(r.progress.facts),
		Writes:       maps.Clone(r.writes),
		ArchiveRunID: r.archiveRun,
		OwnShown:     slices.Clone(r.ownShown),
		Others:       slices.Clone(r.others),
	}
	for _, m := range r.meta {
		c.MessageKinds = append(c.MessageKinds, kindNames[m.kind])
	}
	for _, e := range r.entries {
		c.Tools = append(c.Tools, e.spec.Name)
	}
	for name := range r.withdrawn {
		c.Withdrawn = append(c.Withdrawn, name)
	}
	slices.Sort(c.Withdrawn)
	r.keep.mu.Lock()
	for n := range r.keep.m {
		c.SafeNumbers = append(c.SafeNumbers, n)
	}
	r.keep.mu.Unlock()
	slices.Sort(c.SafeNumbers)
	if r.mem != nil {
		c.Archived = r.mem.snapshot()
	}
	return c
}
