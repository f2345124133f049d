package openaiapi

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
	"github.com/hermes-gw/hermes/gateway"
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
// The key's place (limits.go) is held until the handler returns.
func (a *API) chatCompletions(c *gin.Context) {
	key, err := a.authorize(c)
	if err != nil {
		a.writeAPIError(c, err)
		return
	}
	release, err := a.limits.admit(a.s.Config.OpenAIAPI, key, a.s.Now())
	if err != nil {
		a.writeAPIError(c, err)
		return
	}
	defer release()
	req, err := a.readChatRequest(c.Request, key)
	if err != nil {
		a.writeAPIError(c, err)
		return
	}
	runID := ops.NewRunID()
	// A client that traces sends traceparent: the run's trace links to it.
	from := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header)))
	ctx, span := ops.StartRunSpan(context.WithoutCancel(c.Request.Context()), a.s.Tracer, "hermes.api_run", runID, from,
		attribute.String("hermes.channel", apiChannel), attribute.String("hermes.account", accountOf(key)))
	defer span.End()
	var stream *sseStream
	if req.Stream {
		stream = newSSEStream(c.Writer, "chatcmpl-"+runID, req.Model, a.s.Now().Unix(), a.s.Config.OpenAIAPI.WriteTimeout)
		defer stream.close()
	}
	res, err := a.runTurn(ctx, key, req, runID, stream)
	switch {
	case err != nil && stream != nil:
		a.s.Log.Error("openai api: run failed", "run_id", runID, "err", err)
		a.streamEnded(runID, stream.abort(newAPIError(http.StatusInternalServerError, errTypeServer, "", "", "the agent run failed; try again")))
	case err != nil:
		a.writeAPIError(c, err)
	case stream != nil:
		a.streamEnded(runID, stream.finish(res, req.StreamOptions != nil && req.StreamOptions.IncludeUsage))
	default:
		setWriteDeadline(c.Writer, a.s.Config.OpenAIAPI.WriteTimeout)
		c.JSON(http.StatusOK, openai.ChatCompletionResponse{
			ID: "chatcmpl-" + runID, Object: "chat.completion", Created: a.s.Now().Unix(), Model: req.Model,
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
func (a *API) streamEnded(runID string, dropped error) {
	if dropped != nil {
		a.s.Log.Warn("openai api: stream client dropped; the run was recorded", "run_id", runID, "err", dropped)
	}
}

// accountOf is the account of a key's sessions: its name, else its user.
func accountOf(key config.OpenAIKey) string { return cmp.Or(key.Name, key.UserID) }

func usageOf(res agent.Result) openai.Usage {
	return openai.Usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens,
		TotalTokens: res.PromptTokens + res.CompletionTokens}
}

// runTurn runs the agent for one request as the key's identity and
// records the turn. History is what the client sent when it sent earlier
// messages (it keeps the conversation), else the Hermes session's. A
// failed run is recorded too and returned as an error.
func (a *API) runTurn(ctx context.Context, key config.OpenAIKey, req chatRequest, runID string, stream *sseStream) (agent.Result, error) {
	started := a.s.Now()
	in := channels.Inbound{
		Channel: apiChannel, Account: accountOf(key), MsgID: runID, MsgType: channels.TypeText,
		ChatID: apiChatID(key, req.session), ChatType: channels.ChatSingle, Text: req.userText,
		Sender: channels.Identity{UserID: key.UserID, Name: key.Name, CorpID: key.CorpID},
	}
	sessionID, err := store.EnsureSession(ctx, a.s.Pool, store.SessionKeyOf(in), started)
	if err != nil {
		return agent.Result{}, err
	}
	caller := skills.Caller{UserID: key.UserID, Name: key.Name, Channel: apiChannel, Account: in.Account,
		CorpID: key.CorpID, ChatID: in.ChatID, TraceID: runID}
	turn, err := a.s.Agent.NewTurn(ctx, gateway.TurnInput{Caller: caller, Session: sessionID, Text: req.userText, History: req.history})
	if err != nil {
		return agent.Result{}, err
	}
	var progress func(agent.Event)
	if stream != nil {
		progress = func(e agent.Event) { stream.event(e, a.s.Config.Messages.Working) }
	}
	res, runErr := a.s.Agent.Run(ctx, apiChannel, turn, progress, nil)
	run := &store.RunRecord{ID: runID, SessionID: sessionID, Model: a.s.Agent.ModelName(), StopReason: res.StopReason,
		StartedAt: started, FinishedAt: a.s.Now(), Reply: res.Reply}
	status := store.InboundDone
	if runErr != nil {
		run.Error, status = runErr.Error(), store.InboundFailed
	}
	if err := a.recordTurn(context.WithoutCancel(ctx), in, status, run, gateway.TraceSteps(res.Steps, run)); err != nil {
		a.s.Log.Error("openai api: turn not recorded", "run_id", runID, "err", err)
	}
	if runErr != nil {
		return res, fmt.Errorf("openaiapi: run %s: %w", runID, runErr)
	}
	if res.Reply == "" {
		res.Reply = a.s.Config.Messages.Empty
	}
	return res, nil
}

// recordTurn stores an API turn as a chat message's is stored: the
// message (done or failed), its run and trace, and on success the turn in
// the session's history, in one short transaction after the run.
func (a *API) recordTurn(ctx context.Context, in channels.Inbound, status string, run *store.RunRecord, steps []store.StepRecord) error {
	now := a.s.Now()
	return store.InTx(ctx, a.s.Pool, func(tx pgx.Tx) error {
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
