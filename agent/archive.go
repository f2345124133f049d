package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
)

// Archive keeps the full text of observations that context compression
// replaced with summaries, so the model can fetch them again
// (recall_observation) and the trace can show them. The gateway implements
// it in Postgres; Options.Archive nil keeps them in memory for the run.
//
// Put returns a reference unique within runID. Get returns the text Put
// stored under ref, or an error wrapping ErrNotArchived when there is none.
// Both must be safe for concurrent use.
type Archive interface {
	Put(ctx context.Context, runID, text string) (ref string, err error)
	Get(ctx context.Context, runID, ref string) (string, error)
}

// ErrNotArchived is wrapped by Archive.Get when ref is unknown.
var ErrNotArchived = errors.New("no archived observation with this reference")

// memArchive is the in-memory Archive of one run.
type memArchive struct {
	mu    sync.Mutex
	texts map[string]string // runID + "\x00" + ref → text
	next  int
}

func newMemArchive(saved map[string]string) *memArchive {
	a := &memArchive{texts: map[string]string{}}
	maps.Copy(a.texts, saved)
	a.next = len(saved)
	return a
}

func (a *memArchive) Put(_ context.Context, runID, text string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		a.next++
		ref := fmt.Sprintf("obs-%d", a.next)
		if _, taken := a.texts[runID+"\x00"+ref]; !taken {
			a.texts[runID+"\x00"+ref] = text
			return ref, nil
		}
	}
}

func (a *memArchive) Get(_ context.Context, runID, ref string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	text, ok := a.texts[runID+"\x00"+ref]
	if !ok {
		return "", fmt.Errorf("archive: %q: %w", ref, ErrNotArchived)
	}
	return text, nil
}

// snapshot returns the stored texts, for a continuation: an in-memory
// archive dies with the run, so its texts travel with the task.
func (a *memArchive) snapshot() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.texts)
}
