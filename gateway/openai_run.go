package gateway

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// finishStop is the finish_reason of every answer: Hermes answers in
// full or says honestly why it stopped, within the text.
const finishStop = "stop"

// chatCompletions is POST /v1/chat/completions, streaming or not.
//
// The run does not depend on the client: it goes on to its end (within
// agent.run_timeout) and is recorded whether the client reads along,
// falls behind and is dropped, or goes away, so its context is detached
// from the request's (net/http cancels that one when a write fails).
// The key's place (openai_limits.go) is held until the handler returns.
func (g *Gateway) chatCompletions(c *gin.Context) {
	key, err := g.authorize(c)
	if err != nil {
		g.writeAPIError(c, err)
		return
	}
	release, err := g.apiLimits.admit(g.cfg.OpenAIAPI, key, g.now())
	if err != nil {
		g.writeAPIError(c, err)
		return
	}
	defer release()
	req, err := g.readChatRequest(c.Request, key)
	if err != nil {
		g.writeAPIError(c, err)
		return
	}
	runID := newRunID()
	// A client that traces sends traceparent: the run's trace links to it.
	from := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header)))
	ctx, span := ops.StartRunSpan(context.WithoutCancel(c.Request.Context()), g.tracer, "hermes.api_run", runID, from,
		attribute.String("hermes.channel", apiChannel), attribute.String("hermes.account", accountOf(key)))
	defer span.End()
	var stream *sseStream
	if req.Stream {
		stream = newSSEStream(c.Writer, "chatcmpl-"+runID, req.Model, g.now().Unix(), g.cfg.OpenAIAPI.WriteTimeout)
		defer stream.close()
	}
	res, err := g.runAPITurn(ctx, key, req, runID, stream)
	switch {
	case err != nil && stream != nil:
		g.log.Error("openai api: run failed", "run_id", runID, "err", err)
		g.streamEnded(runID, stream.abort(newAPIError(http.StatusInternalServerError, errTypeServer, "", "", "the agent run failed; try again")))
	case err != nil:
		g.writeAPIError(c, err)
	case stream != nil:
		g.streamEnded(runID, stream.finish(res, req.StreamOptions != nil && req.StreamOptions.IncludeUsage))
	default:
		setWriteDeadline(c.Writer, g.cfg.OpenAIAPI.WriteTimeout)
		c.JSON(http.StatusOK, openai.ChatCompletionResponse{
			ID: "chatcmpl-" + runID, Object: "chat.completion", Created: g.now().Unix(), Model: req.Model,
			Choices: []openai.ChatCompletionChoice{{
				Message:      openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: res.Reply},
				FinishReason: finishStop,
			}},
			Usage: usageOf(res),
		})
	}
	ops.EndSpan(span, err)
}

// streamEnded logs a stream whose client was dropped (dropped != nil); the
// run itself was recorded as for any client.
func (g *Gateway) streamEnded(runID string, dropped error) {
	if dropped != nil {
		g.log.Warn("openai api: stream client dropped; the run was recorded", "run_id", runID, "err", dropped)
	}
}

// accountOf is the account of a key's sessions: its name, else its user.
func accountOf(key config.OpenAIKey) string { return cmp.Or(key.Name, key.UserID) }

func usageOf(res agent.Result) openai.Usage {
	return openai.Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens,
		TotalTokens: res.PromptTokens + res.CompletionTokens}
}

// runAPITurn runs the agent for one request as the key's identity and
// records the turn. History is what the client sent when it sent earlier
// messages (it keeps the conversation), else the Hermes session's. A
// failed run is recorded too and returned as an error.
func (g *Gateway) runAPITurn(ctx context.Context, key config.OpenAIKey, req chatRequest, runID string, stream *sseStream) (agent.Result, error) {
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
	res, runErr := g.agent.Run(ctx, apiChannel, turn, progress, nil)
	run := &store.RunRecord{ID: runID, SessionID: sessionID, Model: g.agent.ModelName(), StopReason: res.StopReason,
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
