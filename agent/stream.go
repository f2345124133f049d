package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// ChatStream sends one request with stream=true and assembles the chunks
// into a response shaped like Chat's: content, tool calls (their argument
// fragments joined by index), finish reason and usage (requested with
// stream_options.include_usage). onDelta gets each piece of content as it
// arrives. Errors are wrapped "agent: model:" like Chat's.
func (m *openAIModel) ChatStream(ctx context.Context, req openai.ChatCompletionRequest, onDelta func(string)) (openai.ChatCompletionResponse, error) {
	if req.Model == "" {
		req.Model = m.model
	}
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := m.client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return openai.ChatCompletionResponse{}, fmt.Errorf("agent: model: %w", err)
	}
	defer stream.Close()
	var acc streamAccumulator
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return acc.response(), nil
		}
		if err != nil {
			return acc.response(), fmt.Errorf("agent: model: stream: %w", err)
		}
		acc.add(chunk, onDelta)
	}
}

// streamAccumulator joins stream chunks into one response.
type streamAccumulator struct {
	id, model string
	content   strings.Builder
	calls     []*openai.ToolCall
	indexes   []int // stream index of each call
	finish    openai.FinishReason
	usage     openai.Usage
}

func (a *streamAccumulator) add(chunk openai.ChatCompletionStreamResponse, onDelta func(string)) {
	a.id, a.model = chunk.ID, chunk.Model
	if chunk.Usage != nil {
		a.usage = *chunk.Usage
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // n=1: only the first choice matters
		}
		if d := ch.Delta.Content; d != "" {
			a.content.WriteString(d)
			if onDelta != nil {
				onDelta(d)
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			a.addCall(tc)
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
}

// addCall merges one tool-call fragment: the first fragment of an index
// carries id, type and name, later ones pieces of the arguments. Servers
// that omit the index start a call with an id and continue it without one.
func (a *streamAccumulator) addCall(tc openai.ToolCall) {
	var c *openai.ToolCall
	switch {
	case tc.Index != nil:
		if i := slices.Index(a.indexes, *tc.Index); i >= 0 {
			c = a.calls[i]
		}
	case tc.ID == "" && len(a.calls) > 0:
		c = a.calls[len(a.calls)-1]
	}
	if c == nil {
		c = &openai.ToolCall{}
		idx := len(a.calls)
		if tc.Index != nil {
			idx = *tc.Index
		}
		a.calls, a.indexes = append(a.calls, c), append(a.indexes, idx)
	}
	if tc.ID != "" {
		c.ID = tc.ID
	}
	if tc.Type != "" {
		c.Type = tc.Type
	}
	c.Function.Name += tc.Function.Name
	c.Function.Arguments += tc.Function.Arguments
}

func (a *streamAccumulator) response() openai.ChatCompletionResponse {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: a.content.String()}
	order := make([]int, len(a.calls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return a.indexes[x] - a.indexes[y] })
	for _, i := range order {
		msg.ToolCalls = append(msg.ToolCalls, *a.calls[i])
	}
	return openai.ChatCompletionResponse{
		ID: a.id, Object: "chat.completion", Model: a.model, Usage: a.usage,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: a.finish}},
	}
}

// deltaFilter turns streamed model text into progress events that are safe
// to show: personal numbers are masked like the reply, which needs a number
// whole, so a trailing run of digits is held back until the next piece
// shows where it ends; and text that starts like a JSON tool call (the
// text fallback), or an answer about someone else's data, is not shown at
// all.
type deltaFilter struct {
	r          *run
	step       int
	all        strings.Builder // everything so far, to recognise a text tool call
	pending    string          // held back
	suppressed bool
	addressed  bool // the answer said whose the personal results are, or there are none
}

// write takes one piece of text and reports whether anything was shown.
func (f *deltaFilter) write(text string) bool {
	f.all.WriteString(text)
	if f.suppressed {
		return false
	}
	if f.r.whoseUnsettled() {
		// The answer may present the caller's data as someone else's:
		// nothing is shown before Hermes has checked it (whose.go).
		f.suppressed = true
		return false
	}
	if !f.addressed && f.r.needsOwnLabel(f.all.String()) {
		// Personal results, and the answer has not said yet whose they
		// are: the reply may get Hermes's label first, so the stream waits
		// rather than show a start the reply will not have.
		f.pending += text
		return false
	}
	f.addressed = true
	lead := strings.TrimLeft(f.all.String(), " \n\t")
	switch {
	case strings.HasPrefix(lead, "{") || strings.HasPrefix(lead, "```"):
		f.suppressed = true
		return false
	case len(lead) < 3 && strings.HasPrefix("```", lead):
		f.pending += text // too short to tell yet
		return false
	}
	f.pending += text
	cut := len(f.pending)
	for cut > 0 && (isDigit(f.pending[cut-1]) || f.pending[cut-1] == 'X' || f.pending[cut-1] == 'x') {
		cut--
	}
	if cut == 0 {
		return false
	}
	f.show(f.pending[:cut])
	f.pending = f.pending[cut:]
	return true
}

// flush shows what was held back once the answer is complete.
func (f *deltaFilter) flush() {
	if !f.addressed && f.r.needsOwnLabel(f.all.String()) {
		return // the reply, with its label, shows it
	}
	if !f.suppressed && f.pending != "" {
		f.show(f.pending)
		f.pending = ""
	}
}

func (f *deltaFilter) show(text string) {
	f.r.emit(Event{Kind: EventModelDelta, Text: maskPII(text, &f.r.keep), Step: f.step})
}
