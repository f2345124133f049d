package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// finishStop is the finish_reason of every answer: Hermes answers in
// full or says honestly why it stopped, within the text.
const finishStop = "stop"

// chatCompletions is POST /v1/chat/completions, streaming or not.
func (g *Gateway) chatCompletions(c *gin.Context) {
	key, err := g.authorize(c)
	if err != nil {
		g.writeAPIError(c, err)
		return
	}
	req, err := g.readChatRequest(c.Request, key)
	if err != nil {
		g.writeAPIError(c, err)
		return
	}
	runID := newRunID()
	// A client that traces sends traceparent: the run's trace links to it.
	from := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header)))
	ctx, span := g.startRunSpan(c.Request.Context(), "hermes.api_run", runID, from,
		attribute.String("hermes.channel", apiChannel), attribute.String("hermes.account", accountOf(key)))
	defer span.End()
	var stream *sseStream
	if req.Stream {
		stream = newSSEStream(c, "chatcmpl-"+runID, req.Model, g.now().Unix())
	}
	res, err := g.runAPITurn(ctx, key, req, runID, stream)
	switch {
	case err != nil && stream != nil:
		stream.fail(newAPIError(http.StatusInternalServerError, errTypeServer, "", "", "the agent run failed; try again"))
		g.log.Error("openai api: run failed", "run_id", runID, "err", err)
	case err != nil:
		g.writeAPIError(c, err)
	case stream != nil:
		stream.finish(res, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	default:
		c.JSON(http.StatusOK, openai.ChatCompletionResponse{
			ID: "chatcmpl-" + runID, Object: "chat.completion", Created: g.now().Unix(), Model: req.Model,
			Choices: []openai.ChatCompletionChoice{{
				Message:      openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: res.Reply},
				FinishReason: finishStop,
			}},
			Usage: usageOf(res),
		})
	}
	endSpan(span, err)
}

// accountOf is the account of a key's sessions: its name, else its user.
func accountOf(key OpenAIKey) string { return cmp.Or(key.Name, key.UserID) }

func usageOf(res agent.Result) openai.Usage {
	return openai.Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens,
		TotalTokens: res.PromptTokens + res.CompletionTokens}
}

// runAPITurn runs the agent for one request as the key's identity and
// records the turn. History is what the client sent when it sent earlier
// messages (it keeps the conversation), else the Hermes session's. A
// failed run is recorded too and returned as an error.
func (g *Gateway) runAPITurn(ctx context.Context, key OpenAIKey, req chatRequest, runID string, stream *sseStream) (agent.Result, error) {
	started := g.now()
	in := channels.Inbound{
		Channel: apiChannel, Account: accountOf(key), MsgID: runID, MsgType: channels.TypeText,
		ChatID: apiChatID(key, req.session), ChatType: channels.ChatSingle, Text: req.userText,
		Sender: channels.Identity{UserID: key.UserID, Name: key.Name, CorpID: key.CorpID},
	}
	sessionID, err := store.EnsureSession(ctx, g.pool, sessionKey(in), started)
	if err != nil {
		return agent.Result{}, err
	}
	history := req.history
	if len(history) == 0 {
		if history, err = g.sessionHistory(ctx, sessionID); err != nil {
			return agent.Result{}, err
		}
	}
	caller := skills.Caller{UserID: key.UserID, Name: key.Name, Channel: apiChannel, Account: in.Account,
		CorpID: key.CorpID, ChatID: in.ChatID, TraceID: runID}
	turn := agent.Turn{
		SessionID: fmt.Sprint(sessionID), RunID: runID, SystemPrompt: g.cfg.Agent.SystemPrompt,
		History: history, UserText: req.userText, Tools: g.skills.Load().ToolsFor(caller),
	}
	var progress func(agent.Event)
	if stream != nil {
		progress = func(e agent.Event) { stream.event(e, g.cfg.Messages.Working) }
	}
	runStart := time.Now()
	res, runErr := agent.Run(ctx, g.limiter.model(g.model, nil), turn, g.agentOptions(progress))
	g.metrics.ran(apiChannel, res, time.Since(runStart))
	run := &store.RunRecord{ID: runID, SessionID: sessionID, Model: g.modelName(), StopReason: res.StopReason,
		StartedAt: started, FinishedAt: g.now(), Reply: res.Reply}
	status := store.InboundDone
	if runErr != nil {
		run.Error, status = runErr.Error(), store.InboundFailed
	}
	if err := g.recordAPITurn(context.WithoutCancel(ctx), in, status, run, traceSteps(res.Steps, run)); err != nil {
		g.log.Error("openai api: turn not recorded", "run_id", runID, "err", err)
	}
	if runErr != nil {
		return res, fmt.Errorf("gateway: api run %s: %w", runID, runErr)
	}
	if res.Reply == "" {
		res.Reply = g.cfg.Messages.Empty
	}
	return res, nil
}

// sessionHistory is the session's recent turns as the model sees them.
func (g *Gateway) sessionHistory(ctx context.Context, sessionID int64) ([]openai.ChatCompletionMessage, error) {
	since := g.now().Add(-g.cfg.Agent.HistoryIdle)
	history, err := store.RecentHistory(ctx, g.pool, sessionID, 2*g.cfg.Agent.HistoryTurns, since)
	if err != nil {
		return nil, err
	}
	msgs := make([]openai.ChatCompletionMessage, 0, len(history))
	for _, h := range history {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: h.Role, Content: h.Content})
	}
	return msgs, nil
}

// recordAPITurn stores an API turn as a chat message's is stored: the
// message (done or failed), its run and trace, and on success the turn in
// the session's history, in one short transaction after the run.
func (g *Gateway) recordAPITurn(ctx context.Context, in channels.Inbound, status string, run *store.RunRecord, steps []store.StepRecord) error {
	now := g.now()
	return store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
		id, _, err := store.InsertInbound(ctx, tx, in, status)
		if err != nil {
			return err
		}
		run.InboundID = id
		if err := store.InsertRun(ctx, tx, *run, steps); err != nil {
			return err
		}
		if status == store.InboundDone {
			if err := store.InsertTurn(ctx, tx, run.SessionID, id, run.ID, in.Text, run.Reply, now); err != nil {
				return err
			}
		}
		return store.TouchSession(ctx, tx, run.SessionID, now)
	})
}

// sseStream writes a run as OpenAI chat.completion.chunk events. Model
// text goes out as content deltas as it streams; tool progress goes out as
// reasoning_content deltas (the field DeepSeek-style reasoning uses, shown
// apart from the answer by Open WebUI, Cherry Studio and LobeChat, and
// ignored by clients that do not know it), so it never mixes into the
// answer. Writes are serialised; the agent's callback writes directly,
// which a client that stops reading can slow down, never corrupt.
type sseStream struct {
	c       *gin.Context
	id      string
	model   string
	created int64
	mu      sync.Mutex
	sent    strings.Builder // the content sent so far
	step    int             // the model step whose text is being sent
}

func newSSEStream(c *gin.Context, id, model string, created int64) *sseStream {
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	c.Status(http.StatusOK)
	s := &sseStream{c: c, id: id, model: model, created: created}
	s.write(s.chunk(chunkDelta{Role: openai.ChatMessageRoleAssistant}, nil))
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

// write sends one event; the caller holds mu or is the only writer.
func (s *sseStream) write(v any) {
	b, _ := json.Marshal(v) // plain structs always marshal
	fmt.Fprintf(s.c.Writer, "data: %s\n\n", b)
	s.c.Writer.Flush()
}

// event takes one agent progress event.
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
		s.write(s.chunk(chunkDelta{ReasoningContent: fmt.Sprintf(working, cmp.Or(e.ToolDisplay, e.Tool)) + "\n"}, nil))
	}
}

func (s *sseStream) sendContent(text string) {
	s.sent.WriteString(text)
	s.write(s.chunk(chunkDelta{Content: text}, nil))
}

// finish sends what of the reply the stream has not shown, the finish
// chunk, the usage chunk when asked for, and [DONE]. When the agent
// changed its answer after streaming it (a format fix, a stop), the final
// reply follows as a paragraph of its own.
func (s *sseStream) finish(res agent.Result, includeUsage bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sent := s.sent.String()
	switch rest, ok := strings.CutPrefix(res.Reply, sent); {
	case ok && rest != "":
		s.sendContent(rest)
	case !ok && strings.TrimSpace(sent) != strings.TrimSpace(res.Reply):
		s.sendContent("\n\n" + res.Reply)
	}
	stop := finishStop
	s.write(s.chunk(chunkDelta{}, &stop))
	if includeUsage {
		u := usageOf(res)
		s.write(chunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
			Choices: []chunkChoice{}, Usage: &u})
	}
	fmt.Fprint(s.c.Writer, "data: [DONE]\n\n")
	s.c.Writer.Flush()
}

// fail ends a stream that had started with an error event, as OpenAI does.
func (s *sseStream) fail(e *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write(map[string]any{"error": e})
	fmt.Fprint(s.c.Writer, "data: [DONE]\n\n")
	s.c.Writer.Flush()
}
