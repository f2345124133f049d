package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/modellimit"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// AgentRunner runs the agent the one way this replica runs it, whatever
// brought the turn (a chat message, the OpenAI-compatible API, a prompt
// report): through the replica's model limiter, with the configured
// budgets and the Postgres observation archive, counted in the metrics
// under the turn's channel.
type AgentRunner struct {
	cfg      *config.Config
	pool     *pgxpool.Pool
	model    agent.Model
	limiter  *modellimit.Limiter // in front of model, shared by this replica's runs
	skills   *skills.Live
	features []Feature // their chat tools and the memory's notes
	metrics  *ops.Metrics
	now      func() time.Time
	log      *slog.Logger
}

// Run runs turn for channel. progress receives the run's events as they
// come and must not block (nil: none); queued is told true when the run
// waits for its turn at the model and false when it gets it (nil: not
// told).
func (a *AgentRunner) Run(ctx context.Context, channel string, turn agent.Turn, progress func(agent.Event), queued func(bool)) (agent.Result, error) {
	start := time.Now()
	res, err := agent.Run(ctx, a.limiter.Model(a.model, queued), turn, agent.Options{
		Model:    a.cfg.Model.Name,
		MaxSteps: a.cfg.Agent.MaxSteps,
		Timeout:  a.cfg.Agent.RunTimeout,
		Now:      a.now,
		Logger:   a.log,
		Archive:  archive{store.Archive{Pool: a.pool}},
		Plan:     a.cfg.Agent.Plan,
		Progress: progress,
		Messages: a.cfg.Messages.Agent,
	})
	a.metrics.Ran(channel, res, time.Since(start))
	return res, err
}

// TurnInput is what a run is asked to do, by whoever asks: the chat
// pipeline, the OpenAI-compatible API, a report.
type TurnInput struct {
	// Caller is whose identity the skills act for and whose skills they
	// are; its TraceID is the run's id.
	Caller skills.Caller
	// Session is the session whose history and recent skills the run
	// reads; 0 for none (a report runs on its own).
	Session int64
	Text    string
	Images  []agent.Image
	// History is the conversation as a client sent it (the API); nil:
	// the session's.
	History []agent.Message
	// Read is the session's history and recent skills when they were read
	// already (with the chat run's claim, store.ClaimInbound); nil: they
	// are read here.
	Read *store.SessionRead
	// Unattended offers only the skills that may run with nobody to
	// confirm them (read-only, or reports: allow): a report made in chat.
	Unattended bool
	// Message is the chat message the run answers (nil for the API and
	// reports): the features' chat tools and the sender's notes are
	// offered for it.
	Message *channels.Inbound
	// Resume continues a task that stopped to ask the user.
	Resume *agent.Continuation
}

// NewTurn builds the turn of in: the one place a run's input is put
// together, so the chat, the API and reports follow the same rules — the
// deployment's system prompt, the caller's skills (by the access rules)
// with the chat's bound skills, the session's history and recent skills,
// and for a chat message the features' tools and the sender's notes
// (long-term memory; none when a task resumes, whose stored conversation
// carries what it had). A turn returned with an error is not to be run.
func (a *AgentRunner) NewTurn(ctx context.Context, in TurnInput) (agent.Turn, error) {
	turn := agent.Turn{
		SessionID: in.Caller.TraceID, RunID: in.Caller.TraceID, SystemPrompt: a.cfg.Agent.SystemPrompt,
		UserText: in.Text, Images: in.Images, History: in.History, Resume: in.Resume,
		BoundTools: a.cfg.Skills.ChatSkills[in.Caller.ChatID],
	}
	for _, t := range a.skills.Load().ToolsFor(in.Caller) {
		if !in.Unattended || t.Spec().ReportsAllowed {
			turn.Tools = append(turn.Tools, t)
		}
	}
	if in.Session != 0 {
		turn.SessionID = fmt.Sprint(in.Session)
		var err error
		switch {
		case in.Read != nil && len(turn.History) == 0:
			turn.History, turn.RecentTools = historyMessages(in.Read.History), in.Read.RecentTools
		case len(turn.History) > 0:
			turn.RecentTools, err = store.RecentTools(ctx, a.pool, in.Session, a.historySince())
		default:
			var history []store.HistoryEntry
			history, turn.RecentTools, err = store.HistoryAndRecentTools(ctx, a.pool, in.Session, a.historyLimit(), a.historySince())
			turn.History = historyMessages(history)
		}
		if err != nil {
			return turn, err
		}
	}
	if in.Message != nil {
		for _, f := range a.features {
			if tf, ok := f.(ChatToolFeature); ok {
				turn.Tools = append(turn.Tools, tf.ChatTools(*in.Message)...)
			}
		}
		if mem, ok := FeatureOf[MemoryFeature](a.features); ok && in.Resume == nil {
			turn.Notes = mem.Notes(ctx, *in.Message, in.Text)
		}
	}
	return turn, nil
}

// Model is the model runs use, under the same limits, for a feature's
// own one-off calls (memory extraction).
func (a *AgentRunner) Model() agent.Model { return a.limiter.Model(a.model, nil) }

// History is a session's recent turns as the model sees them: at most
// agent.history_turns of them, none older than agent.history_idle.
func (a *AgentRunner) History(ctx context.Context, sessionID int64) ([]agent.Message, error) {
	history, err := store.RecentHistory(ctx, a.pool, sessionID, a.historyLimit(), a.historySince())
	if err != nil {
		return nil, err
	}
	return historyMessages(history), nil
}

// historyQuery is the history a chat run reads with its claim.
func (a *AgentRunner) historyQuery() store.HistoryQuery {
	return store.HistoryQuery{Limit: a.historyLimit(), Since: a.historySince()}
}

// historyLimit is how many messages of history a turn reads: two per turn.
func (a *AgentRunner) historyLimit() int { return 2 * a.cfg.Agent.HistoryTurns }

// historyMessages are history's entries as the model sees them.
func historyMessages(history []store.HistoryEntry) []agent.Message {
	msgs := make([]agent.Message, 0, len(history))
	for _, h := range history {
		msgs = append(msgs, agent.Message{Role: h.Role, Content: h.Content})
	}
	return msgs
}

// historySince is when a session's context starts: what is older than
// agent.history_idle is no longer the conversation.
func (a *AgentRunner) historySince() time.Time { return a.now().Add(-a.cfg.Agent.HistoryIdle) }

// ModelName is the model a run is recorded under.
func (a *AgentRunner) ModelName() string {
	if a.cfg.Model.Provider == "offline" {
		return "offline-demo"
	}
	return a.cfg.Model.Name
}

// archive is the Postgres observation archive as the agent sees it.
type archive struct{ store.Archive }

// Get maps an unknown reference to agent.ErrNotArchived.
func (a archive) Get(ctx context.Context, runID, ref string) (string, error) {
	text, err := a.Archive.Get(ctx, runID, ref)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", agent.ErrNotArchived, err)
	}
	return text, err
}
