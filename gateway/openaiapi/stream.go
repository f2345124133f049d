package openaiapi

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
)

// maxStreamBacklog bounds the events of one stream not yet written to its
// client (but one event alone, see addRaw). A whole answer is a few KiB;
// a client a quarter MiB behind has stopped reading, and holding more for
// it would let a few such clients fill the replica's memory.
const maxStreamBacklog = 256 << 10

// Why a stream's client was dropped, besides a failed write.
var (
	errFellBehind = fmt.Errorf("client fell %d bytes behind the stream", maxStreamBacklog)
	errNotEnded   = errors.New("the handler returned without ending the stream")
)

// longAgo is a write deadline that has passed: it makes a write blocked on
// a dropped client's socket return at once.
var longAgo = time.Unix(1, 0)

// sseStream writes a run as OpenAI chat.completion.chunk events. Model
// text goes out as content deltas as it streams; tool progress goes out as
// reasoning_content deltas (the field DeepSeek-style reasoning uses, shown
// apart from the answer by Open WebUI, Cherry Studio and LobeChat, and
// ignored by clients that do not know it), so it never mixes into the
// answer.
//
// The run never waits for the client: the agent's progress callback runs
// inside the model's stream, which holds a slot of the gateway's model
// limiter, so a client that stops reading would hold that slot for as
// long as it liked. Events are appended to a bounded backlog instead, and a writer
// goroutine, owned by the handler, writes them out with a deadline per
// write. A client that lets the backlog fill, or misses a deadline, is
// dropped: its events are discarded from then on, its connection is cut
// (not ended with [DONE], so it cannot mistake a part for the whole), and
// the run goes on to its end and is recorded as for any client.
type sseStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration // per write
	id      string
	model   string
	created int64

	mu      sync.Mutex
	backlog []byte // events not yet taken by the writer
	ended   bool   // finish or abort was called: no more events
	dropped error  // why the client was dropped; nil while it keeps up
	sent    strings.Builder
	step    int // the model step whose text is being sent

	wake chan struct{} // the backlog grew or the stream ended
	done chan struct{} // closed when the writer has returned
}

// newSSEStream starts the response and its writer. The caller ends the
// stream (finish or abort) and calls close before its handler returns,
// and does not write to w itself meanwhile.
func newSSEStream(w http.ResponseWriter, id, model string, created int64, timeout time.Duration) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	s := &sseStream{w: w, rc: http.NewResponseController(w), timeout: timeout, id: id, model: model, created: created,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.mu.Lock()
	s.add(s.chunk(chunkDelta{Role: openai.ChatMessageRoleAssistant}, nil))
	s.mu.Unlock()
	go s.write()
	return s
}

// chunk is one chat.completion.chunk, exactly as OpenAI sends it.
type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *openai.Usage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role             string `json:"role,omitempty"`
	Content          string `json:"content,omitempty"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

func (s *sseStream) chunk(d chunkDelta, finish *string) chunk {
	return chunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []chunkChoice{{Delta: d, FinishReason: finish}}}
}

// add queues one event for the writer; s.mu is held. It never blocks.
func (s *sseStream) add(v any) {
	b, _ := json.Marshal(v) // plain structs always marshal
	s.addRaw("data: " + string(b) + "\n\n")
}

// addRaw queues event. One event alone is taken whatever its size (a
// final answer not streamed before, bounded by the agent), so only a
// client that is behind is dropped for it.
func (s *sseStream) addRaw(event string) {
	if s.dropped != nil {
		return
	}
	if len(s.backlog) > 0 && len(s.backlog)+len(event) > maxStreamBacklog {
		s.drop(errFellBehind)
		return
	}
	s.backlog = append(s.backlog, event...)
	s.poke()
}

// poke tells the writer to look at the stream again.
func (s *sseStream) poke() {
	select {
	case s.wake <- struct{}{}:
	default: // the writer is already due to look
	}
}

// drop gives up on the client; s.mu is held. A write blocked on its
// socket returns at once; net/http then closes the connection.
func (s *sseStream) drop(err error) {
	if s.dropped != nil {
		return
	}
	s.dropped, s.backlog = err, nil
	_ = s.rc.SetWriteDeadline(longAgo)
	s.poke()
}

// write is the writer goroutine: it writes the backlog as it grows, each
// batch within s.timeout, until the stream ended or the client is dropped.
// The deadline is set under s.mu so that a drop's passed deadline is never
// overwritten by a later one.
func (s *sseStream) write() {
	defer close(s.done)
	for range s.wake {
		s.mu.Lock()
		batch, ended := s.backlog, s.ended
		s.backlog = nil
		if s.dropped != nil {
			s.mu.Unlock()
			return
		}
		if len(batch) > 0 {
			// The last deadline stays set: it also bounds the end of the
			// response net/http writes after the handler returns (and
			// clears before the connection's next request).
			_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
		}
		s.mu.Unlock()
		if len(batch) > 0 {
			if _, err := s.w.Write(batch); err != nil {
				s.writeFailed(err)
				return
			}
			// A failed flush shows as the next write's error (net/http
			// keeps it); the deadline bounds the flush itself.
			_ = s.rc.Flush()
		}
		if ended {
			return
		}
	}
}

// writeFailed drops the client after a failed write.
func (s *sseStream) writeFailed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(err)
}

// event takes one agent progress event. It never blocks (agent.Options.Progress).
func (s *sseStream) event(e agent.Event, working string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Kind {
	case agent.EventModelDelta:
		if e.Text == "" {
			return
		}
		if s.sent.Len() > 0 && e.Step != s.step {
			// A new model step after a tool call: a new paragraph.
			s.sendContent("\n\n")
		}
		s.step = e.Step
		s.sendContent(e.Text)
	case agent.EventToolStart:
		s.add(s.chunk(chunkDelta{ReasoningContent: fmt.Sprintf(working, cmp.Or(e.ToolDisplay, e.Tool)) + "\n"}, nil))
	}
}

// sendContent queues text as a content delta; s.mu is held. What was
// queued counts as sent: a dropped client gets nothing more anyway.
func (s *sseStream) sendContent(text string) {
	if s.dropped != nil {
		return
	}
	s.sent.WriteString(text)
	s.add(s.chunk(chunkDelta{Content: text}, nil))
}

// finish sends what of the reply the stream has not shown, the finish
// chunk, the usage chunk when asked for, and [DONE], and waits until they
// are written or the client is dropped. When the agent changed its answer
// after streaming it (a format fix, a stop), the final reply follows as a
// paragraph of its own. The error says why the client was dropped.
func (s *sseStream) finish(res agent.Result, includeUsage bool) error {
	s.mu.Lock()
	sent := s.sent.String()
	switch rest, ok := strings.CutPrefix(res.Reply, sent); {
	case ok && rest != "":
		s.sendContent(rest)
	case !ok && strings.TrimSpace(sent) != strings.TrimSpace(res.Reply):
		s.sendContent("\n\n" + res.Reply)
	}
	stop := finishStop
	s.add(s.chunk(chunkDelta{}, &stop))
	if includeUsage {
		u := usageOf(res)
		s.add(chunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
			Choices: []chunkChoice{}, Usage: &u})
	}
	return s.end()
}

// abort ends a stream that had started with an error event, as OpenAI
// does, and waits like finish.
func (s *sseStream) abort(e *apiError) error {
	s.mu.Lock()
	s.add(map[string]any{"error": e})
	return s.end()
}

// close makes sure the writer has returned before the handler does (a
// panic between the start and the end of a stream): a stream not ended
// is dropped.
func (s *sseStream) close() {
	s.mu.Lock()
	if !s.ended {
		s.drop(errNotEnded)
	}
	s.mu.Unlock()
	<-s.done
}

// end queues [DONE], lets the writer finish (s.mu is held, and released
// here) and waits for it: at most a write's timeout, since nothing is
// added any more.
func (s *sseStream) end() error {
	s.addRaw("data: [DONE]\n\n")
	s.ended = true
	s.poke()
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}
