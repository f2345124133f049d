package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/media"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// agentAttempts is how often an inbound message is tried before the user is
// told it failed: a model outage should not leave a colleague waiting for
// hours of River's default backoff.
const agentAttempts = 3

// leaseLostSnooze is how long a job whose run lost its session lease
// waits before it looks again: by then the run that took the session over
// has usually answered the message.
const leaseLostSnooze = time.Second

// runner answers inbound messages: one run per session at a time, the
// agent or a command or a confirmation, and the outcome committed with
// its reply in one transaction.
type runner struct {
	cfg      *config.Config
	pool     *pgxpool.Pool
	channels map[string]channels.Channel
	skills   *skills.Live // for /help and a confirmed call
	features []Feature
	agent    *AgentRunner
	outbox   *Outbox
	delivery *delivery // sends the answers it commits (inline.go)
	jobs     *Jobs
	leases   *runLeases
	tracer   trace.Tracer
	now      func() time.Time
	log      *slog.Logger
	// describe and transcribe are media.describe and media.transcribe,
	// nil when off.
	describe   media.Describer
	transcribe media.Transcriber
}

type processWorker struct {
	river.WorkerDefaults[ProcessInboundArgs]
	rn   *runner
	runs *inlineRuns // whose slots the workers share
}

// Work answers one inbound message and translates the outcome for River.
func (w *processWorker) Work(ctx context.Context, job *river.Job[ProcessInboundArgs]) error {
	release, err := w.runs.acquire(ctx)
	if err != nil {
		return riverOutcome(err)
	}
	defer release()
	ctx = ops.WithLink(ctx, ops.JobSpanContext(job.Metadata))
	return riverOutcome(w.rn.process(ctx, job.Args.InboundID, job.Attempt >= job.MaxAttempts))
}

// riverOutcome is what River should do with a job after process.
func riverOutcome(err error) error {
	switch {
	case err == nil, errors.Is(err, errSessionBusy):
		return nil
	case errors.Is(err, errLeaseLost):
		return river.JobSnooze(leaseLostSnooze)
	case errors.Is(err, errShuttingDown):
		return river.JobSnooze(0)
	case errors.Is(err, errUnknownMessage), errors.Is(err, errNoChannel):
		return river.JobCancel(err)
	}
	return err
}

// process answers one inbound message: one run per session at a time
// (under the session's lease, taken in the transaction that reads the
// message), in the order the user wrote, and the reply, history and trace
// committed together with the end of the lease; a full replica then sends
// the reply itself (inline.go), others through its delivery job. A crash
// before that commit leaves a lease that lapses and is swept: the message
// is answered again. A crash after it finds the message done, and the
// reply's parts handed to a delivery job by the sweep. No connection is
// held between queries.
func (rn *runner) process(ctx context.Context, inboundID int64, lastAttempt bool) (err error) {
	runID := ops.NewRunID()
	ctx, span := ops.StartRunSpan(ctx, rn.tracer, "hermes.run", runID, ops.LinkOf(ctx), attribute.Int64("hermes.inbound_id", inboundID))
	defer func() {
		spanErr := err
		if errors.Is(err, errSessionBusy) { // an outcome, not a failure: the run before it goes on
			span.SetAttributes(attribute.Bool("hermes.session_busy", true))
			spanErr = nil
		}
		ops.EndSpan(span, spanErr)
	}()
	runCtx, claim, lease, err := rn.leases.claimInbound(ctx, inboundID, runID, rn.agent.historyQuery())
	if err != nil || lease == nil {
		return err
	}
	row := claim.Row
	span.SetAttributes(attribute.String("hermes.channel", row.In.Channel), attribute.String("hermes.account", row.In.Account))
	committed := false
	defer func() { rn.leases.releaseSession(ctx, lease, row.ID, committed) }()
	switch {
	case row.Status != store.InboundPending: // another run answered it meanwhile
		return nil
	case claim.Older:
		return errSessionBusy // releasing hands the session to the older one
	}
	if row.In.MsgType == channels.TypeMedia {
		if err := rn.fetchMedia(runCtx, row, lastAttempt); err != nil {
			return err
		}
	}
	inline, answerCtx := &inlineReplies{}, runCtx
	if rn.leases.sweeps {
		// A full replica sends its answers itself; a terminal's process
		// (no sweep would take over from it) keeps delivery jobs.
		answerCtx = withInline(runCtx, inline)
	}
	err = rn.answer(answerCtx, row, claim, runID, lastAttempt)
	committed = err == nil
	if err != nil && errors.Is(context.Cause(runCtx), errLeaseLost) {
		return errLeaseLost
	}
	if committed {
		// The lease ended with the commit: the sends do not renew it.
		rn.leases.releaseSession(ctx, lease, row.ID, true)
		rn.delivery.sendInline(ctx, rn.jobs, inline)
	}
	return err
}

// outcome is what answering one message produced; commitAnswer stores it
// in one transaction.
type outcome struct {
	reply        string
	status       string
	run          *store.RunRecord
	steps        []store.StepRecord
	clearPending bool // what the session waited for is resolved
	resetSession bool // /reset: earlier history is no longer context
	// command: the message was a command (/help, /reset, a memory
	// command), not conversation: neither it nor its answer is history
	// the model reads again.
	command bool
	// private: the message's content is not kept once answered (a memory
	// command: what it said is in memories, or was refused as a secret).
	private    bool
	setPending *store.Pending // what the session waits for now
	asyncTasks []agent.AsyncStarted
	// choices are the options setPending offers (a card shows them as
	// buttons, cards.go); settle shows the outcome on the cards of the
	// question this message resolved.
	choices []string
	settle  *cardSettle
}

// answer runs the agent for row (or picks a fixed answer) and commits the
// outcome. On a failed run it returns the error so the job is retried,
// unless this is the last attempt: then the user is told it failed.
func (rn *runner) answer(ctx context.Context, row store.InboundRow, claim store.InboundClaim, runID string, lastAttempt bool) error {
	sessionID := claim.SessionID
	started := rn.now()
	out := outcome{status: store.InboundDone}
	var images []agent.Image
	var modelText string // the text the model sees when it is not the stored one
	switch row.In.MsgType {
	case channels.TypeText, channels.TypeClick: // a tap is its button's word, as if typed
	case channels.TypeMedia:
		in, err := rn.mediaInput(ctx, row)
		if err != nil {
			return err
		}
		if in.Refusal != "" {
			out.reply = in.Refusal
			return rn.commitAnswer(ctx, row, sessionID, runID, out)
		}
		row.In.Text, modelText, images = in.History, in.Text, in.Images
	default:
		out.reply = rn.cfg.Messages.Unsupported
		return rn.commitAnswer(ctx, row, sessionID, runID, out)
	}
	rn.fillDepartments(ctx, &row)
	caller := callerFor(row, runID)
	for _, cf := range commandFeatures(rn.features) {
		if reply, handled, err := cf.Command(ctx, row.In, row.ID); err != nil {
			return err
		} else if handled {
			out.reply, out.command, out.private = reply, true, cf.Private()
			return rn.commitAnswer(ctx, row, sessionID, runID, out)
		}
	}
	if name, raw, ok := parseCommand(row.In.Text, rn.cfg.Messages); ok {
		out.reply, out.resetSession = rn.runCommand(name, raw, caller)
		out.clearPending, out.command = out.resetSession, true
		return rn.commitAnswer(ctx, row, sessionID, runID, out)
	}

	// What the session waited for: a confirmation is resolved here, a
	// follow-up question resumes the task it came from.
	var resume *agent.Continuation
	var note string
	pending, hasPending := claim.Pending, claim.HasPending
	if row.In.MsgType == channels.TypeClick {
		if settle, stale, err := rn.staleClick(ctx, row, pending, hasPending); err != nil {
			return err
		} else if stale {
			out.reply, out.settle = rn.cfg.Messages.Cards.Gone, settle
			return rn.commitAnswer(ctx, row, sessionID, runID, out)
		}
	}
	if hasPending && pending.Kind == store.PendingConfirm {
		cr, err := rn.resolveConfirmation(ctx, row, sessionID, caller)
		if err != nil {
			return err
		}
		out.settle = cr.settle
		if cr.done {
			out.reply, out.run, out.steps, out.setPending = cr.text, cr.run, cr.steps, cr.pending
			return rn.commitAnswer(ctx, row, sessionID, runID, out)
		}
		note = cr.text
	} else if hasPending {
		out.clearPending = true
		out.settle = rn.answeredCards(row, pending)
		if started.Before(pending.ExpiresAt) {
			resume = new(agent.Continuation)
			if err := json.Unmarshal(pending.Payload, resume); err != nil {
				rn.log.Error("unreadable continuation dropped", "session_id", sessionID, "err", err)
				resume = nil
			}
		}
	}

	rn.resolveQuote(ctx, &row)
	input := turnInput{text: cmp.Or(modelText, row.In.Text), images: images, session: claim.Session}
	if row.In.Quote != nil {
		input.text = media.WithQuote(row.In.Quote, input.text, rn.cfg.Messages.Media)
	}
	res, runErr := rn.runWithProgress(ctx, row, sessionID, caller, resume, input)
	out.run = &store.RunRecord{
		ID: runID, SessionID: sessionID, InboundID: row.ID, Model: rn.agent.ModelName(),
		StopReason: res.StopReason, StartedAt: started, FinishedAt: rn.now(), Departments: row.In.Sender.Dept,
	}
	var annotations []agent.Step
	out.reply, annotations = annotate(ctx, rn.features, row.In, res.Reply)
	out.steps = TraceSteps(slices.Concat(res.Steps, annotations), out.run)
	if runErr != nil {
		out.run.Error = runErr.Error()
		if errors.Is(ctx.Err(), context.Canceled) {
			if errors.Is(context.Cause(ctx), errLeaseLost) {
				return errLeaseLost
			}
			return fmt.Errorf("%w: %w", errShuttingDown, runErr)
		}
		if !lastAttempt {
			rn.log.Warn("agent run failed; will retry", "inbound_id", row.ID, "run_id", runID, "err", runErr)
			return fmt.Errorf("gateway: run inbound %d: %w", row.ID, runErr)
		}
		rn.log.Error("agent run failed on the last attempt; telling the user", "inbound_id", row.ID, "run_id", runID, "err", runErr)
		out.reply = rn.cfg.Messages.Failed
		out.status = store.InboundFailed
	}
	if out.reply == "" {
		out.reply = rn.cfg.Messages.Empty
	}
	if note != "" {
		out.reply = note + "\n\n" + out.reply
	}
	out.run.Reply = out.reply
	out.setPending = rn.nextPending(res, sessionID, runID)
	out.choices = res.Choices
	out.asyncTasks = res.AsyncTasks
	return rn.commitAnswer(ctx, row, sessionID, runID, out)
}

// nextPending is what the session waits for after a run that stopped to
// ask the user something.
func (rn *runner) nextPending(res agent.Result, sessionID int64, runID string) *store.Pending {
	var kind string
	var payload any
	var ttl time.Duration
	switch {
	case res.StopReason == agent.StopAwaitingConfirmation && res.PendingConfirmation != nil:
		kind, payload, ttl = store.PendingConfirm, res.PendingConfirmation, rn.cfg.Agent.ConfirmTimeout
	case res.StopReason == agent.StopNeedsInput && res.Continuation != nil:
		kind, payload, ttl = store.PendingFollowup, res.Continuation, rn.cfg.Agent.FollowupTimeout
	default:
		return nil
	}
	b, err := json.Marshal(payload)
	if err != nil {
		rn.log.Error("cannot store what the session waits for", "session_id", sessionID, "err", err)
		return nil
	}
	now := rn.now()
	return &store.Pending{SessionID: sessionID, Kind: kind, Payload: b, RunID: runID, CreatedAt: now, ExpiresAt: now.Add(ttl)}
}

// fillDepartments looks up the sender's departments, for skill access
// rules, on channels whose callbacks do not carry them. A failed lookup
// leaves them empty: skills limited to departments are then not offered.
func (rn *runner) fillDepartments(ctx context.Context, row *store.InboundRow) {
	if len(row.In.Sender.Dept) > 0 {
		return
	}
	depts, err := departmentsOf(ctx, rn.channels, row.In.Channel, row.In.Account, row.In.Sender.UserID)
	if err != nil {
		rn.log.Warn("sender's departments unknown; department-limited skills are not offered",
			"inbound_id", row.ID, "err", err)
		return
	}
	row.In.Sender.Dept = depts
}

// departmentsOf are user's departments as the channel's Directory knows
// them now; none (and no error) on a channel without one.
func departmentsOf(ctx context.Context, chs map[string]channels.Channel, channel, account, user string) ([]string, error) {
	dir, ok := chs[channel].(channels.Directory)
	if !ok {
		return nil, nil
	}
	depts, err := dir.Departments(ctx, account, user)
	if err != nil {
		return nil, fmt.Errorf("departments of %s: %w", user, err)
	}
	return depts, nil
}

// callerFor is the identity skills act for: the verified sender of row.
func callerFor(row store.InboundRow, runID string) skills.Caller {
	return skills.Caller{
		UserID:  row.In.Sender.UserID,
		Name:    row.In.Sender.Name,
		Channel: row.In.Channel,
		Account: row.In.Account,
		CorpID:  row.In.Sender.CorpID,
		ChatID:  row.In.ChatID,
		Depts:   row.In.Sender.Dept,
		TraceID: runID,
		Origin:  skills.InboundID(row.ID),
	}
}

// runWithProgress runs the agent while showing its progress where the
// channel can: drafts for streaming platforms, progress lines on the
// console, a 「处理中…」 once a run takes long elsewhere.
func (rn *runner) runWithProgress(ctx context.Context, row store.InboundRow, sessionID int64,
	caller skills.Caller, resume *agent.Continuation, input turnInput) (agent.Result, error) {
	ch, ok := rn.channels[row.In.Channel]
	if !ok {
		return rn.runAgent(ctx, row, sessionID, caller, resume, input, nil, nil)
	}
	draft, stopDrafts := rn.startDrafts(ctx, ch, row)
	defer stopDrafts()
	stopHint := rn.startProcessingHint(ctx, ch, row)
	defer stopHint()
	report := rn.progressFor(ctx, ch, row)
	var progress func(agent.Event)
	var queued func(bool) // a run waiting for the model shows 「排队中…」 in its draft
	if draft != nil {
		queued = draft.queue
	}
	if draft != nil || report != nil {
		progress = func(e agent.Event) {
			if draft != nil {
				draft.event(e)
			}
			if report != nil {
				report(e)
			}
		}
	}
	return rn.runAgent(ctx, row, sessionID, caller, resume, input, progress, queued)
}

// turnInput is what the model gets of the user's message: its text (with
// a quote, a document's content) and its images. The conversation keeps
// row.In.Text.
type turnInput struct {
	text    string
	images  []agent.Image
	session *store.SessionRead // read with the claim
}

// runAgent runs the agent on input with the session's history, the
// caller's skills and the features' chat tools.
func (rn *runner) runAgent(ctx context.Context, row store.InboundRow, sessionID int64,
	caller skills.Caller, resume *agent.Continuation, input turnInput, progress func(agent.Event), queued func(bool)) (agent.Result, error) {
	turn, err := rn.agent.NewTurn(ctx, TurnInput{Caller: caller, Session: sessionID, Text: input.text, Images: input.images,
		Message: &row.In, Resume: resume, Read: input.session})
	if err != nil {
		return agent.Result{StopReason: agent.StopError}, err
	}
	return rn.agent.Run(ctx, row.In.Channel, turn, progress, queued)
}

// progressFor forwards tool calls as progress lines to channels that can
// show them; nil (no streaming) for the others.
func (rn *runner) progressFor(ctx context.Context, ch channels.Channel, row store.InboundRow) func(agent.Event) {
	pr, ok := ch.(channels.ProgressReporter)
	if !ok {
		return nil
	}
	return func(e agent.Event) {
		if e.Kind == agent.EventToolStart {
			pr.Report(ctx, row.In.Account, row.In.ReplyTo, fmt.Sprintf(rn.cfg.Messages.Working, cmp.Or(e.ToolDisplay, e.Tool)))
		}
	}
}

// TraceSteps are a run's steps as its stored trace (store.InsertRun); it
// adds their tokens to run's.
func TraceSteps(steps []agent.Step, run *store.RunRecord) []store.StepRecord {
	out := make([]store.StepRecord, 0, len(steps))
	for _, s := range steps {
		detail, _ := json.Marshal(s) // Step is plain data; it always marshals
		run.PromptTokens += s.PromptTokens
		run.CompletionTokens += s.CompletionTokens
		out = append(out, store.StepRecord{
			Step: s.N, Kind: s.Kind, Tool: s.Tool, Args: s.Args, Observation: s.Observation,
			Content: s.Content, Error: s.Error, PromptTokens: s.PromptTokens,
			CompletionTokens: s.CompletionTokens, Latency: s.Latency, Detail: detail,
		})
	}
	return out
}

// commitAnswer ends the session lease of run leaseRun (marking the message
// answered ends it; HoldSessionLease fences it first), stores the trace,
// the turn, the reply parts and what the session now waits for, marks the
// message answered, enqueues delivery and hands the session on, all in one
// transaction. It returns errLeaseLost, committing nothing, when the lease
// lapsed and was taken over: the run that took it answers.
func (rn *runner) commitAnswer(ctx context.Context, row store.InboundRow, sessionID int64, leaseRun string, out outcome) error {
	now := rn.now()
	if inl := inlineOf(ctx); inl != nil {
		// This replica sends the answer for as long as it would hold a
		// lease; then the lease sweep hands what is left to a job.
		inl.from, inl.until, inl.replies = now, now.Add(rn.leases.term), nil
	}
	return store.InGenericTx(ctx, rn.pool, func(tx pgx.Tx) error {
		held, err := store.HoldSessionLease(ctx, tx, sessionID, leaseRun)
		if err != nil {
			return err
		}
		if !held {
			return errLeaseLost
		}
		runID := ""
		if out.run != nil {
			if err := store.InsertRun(ctx, tx, *out.run, out.steps); err != nil {
				return err
			}
			runID = out.run.ID
		}
		if (row.In.MsgType == channels.TypeText || out.run != nil) && !out.command { // a media message the agent ran on, too
			if err := store.InsertTurn(ctx, tx, sessionID, row.ID, runID, row.In.Text, out.reply, now); err != nil {
				return err
			}
		}
		if out.resetSession {
			if err := store.ResetSession(ctx, tx, sessionID, now); err != nil {
				return err
			}
		}
		if out.clearPending {
			if err := store.ClearPending(ctx, tx, sessionID); err != nil {
				return err
			}
		}
		if out.setPending != nil {
			if err := store.SetPending(ctx, tx, *out.setPending); err != nil {
				return err
			}
		}
		for _, a := range out.asyncTasks {
			if err := store.SetRunAsyncTaskID(ctx, tx, runID, a.Tool, a.TaskID); err != nil {
				return err
			}
		}
		parts, err := rn.queueAnswer(ctx, tx, row, sessionID, out)
		if err != nil {
			return err
		}
		next, nextChannel, handOn, err := store.SetInboundStatusNext(ctx, tx, row.ID, store.SessionKeyOf(row.In), out.status, now)
		if err != nil {
			return err
		}
		if out.private {
			if err := store.EmptyInbound(ctx, tx, row.ID); err != nil {
				return err
			}
		}
		if mem, ok := FeatureOf[MemoryFeature](rn.features); ok && out.status == store.InboundDone {
			if err := mem.LearnTx(ctx, tx, row.In, row.ID, runID); err != nil {
				return err
			}
		}
		if handOn { // the session's next message (handOver's, read with the status)
			if err := rn.leases.enqueueProcess(ctx, tx, next, nextChannel); err != nil {
				return err
			}
		}
		rn.log.Info("answer committed", slog.Int64("inbound_id", row.ID), slog.Int64("session_id", sessionID),
			slog.String("run_id", runID), slog.Int("parts", parts))
		return nil
	})
}

// queueAnswer queues the answer of a run (commitAnswer) and returns its
// number of parts: as text, unless it asks or resolves a question that
// cards may show (queueCardAnswer), or it is a run's answer the channel
// shows as a card with the rating buttons (queueRatedAnswer).
func (rn *runner) queueAnswer(ctx context.Context, tx pgx.Tx, row store.InboundRow, sessionID int64, out outcome) (int, error) {
	switch {
	case out.setPending != nil || out.settle != nil:
		return rn.queueCardAnswer(ctx, tx, row, sessionID, out)
	case out.run != nil && out.status == store.InboundDone &&
		rn.channels[row.In.Channel].Limits(row.In.Account).CardAnswers && rn.cfg.Ratings.ButtonsOn():
		return rn.queueRatedAnswer(ctx, tx, row, sessionID, out)
	}
	return rn.outbox.Queue(ctx, tx, store.AnswerKey(row.ID), AddressOf(row.In), out.reply)
}
