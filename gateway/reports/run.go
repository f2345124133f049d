package reports

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// errReportFailed: the run is over and recorded as failed; the job ends.
var errReportFailed = errors.New("report run failed")

// errDepartmentsUnknown marks a refusal for access while the owner's
// departments could not be looked up: a retry may find them.
var errDepartmentsUnknown = errors.New("the owner's departments could not be looked up")

// reportKey is the outbox reply key of run's message to target (its
// picture goes under reportKey + ":chart").
func reportKey(runID int64, target int) string { return fmt.Sprintf("report:%d:%d", runID, target) }

// targetAddress is the conversation of a report's target.
func targetAddress(t store.ReportTarget) gateway.Address {
	return gateway.Address{Channel: t.Channel, Account: t.Account, ChatID: t.ChatID, ReplyTo: t.ReplyTo}
}

// reportContent is what a run sends to every target.
type reportContent struct {
	text  string
	chart *Chart
	png   []byte
}

// runReport makes the report of run runID as its owner and queues it for
// every target through the outbox, in one transaction with the run's
// record. A failure is retried; on the last attempt (or one retrying
// cannot fix) the run is recorded as failed and errReportFailed returned.
func (s *Service) runReport(ctx context.Context, runID int64, lastAttempt bool) error {
	run, err := store.GetReportRun(ctx, s.gw.Pool, runID)
	if err != nil || run.Status == store.RunDone || run.Status == store.RunFailed {
		return err
	}
	rep, err := store.GetReport(ctx, s.gw.Pool, run.ReportID, nil)
	if err != nil {
		return err
	}
	if err := store.StartReportRun(ctx, s.gw.Pool, runID, s.gw.Now()); err != nil {
		return err
	}
	content, err := s.makeReport(ctx, rep, run)
	if err != nil {
		// Refused: the owner may no longer run the skill this way (access
		// by the departments they have now, a write skill in a report made
		// in chat, a skill gone).
		refused := errors.Is(err, skills.ErrAccessDenied) || errors.Is(err, skills.ErrUnknownSkill) ||
			errors.Is(err, ErrWriteSkill)
		permanent := (refused || errors.Is(err, ErrBadReport) || errors.Is(err, ErrBadChart)) &&
			!errors.Is(err, errDepartmentsUnknown)
		if !permanent && !lastAttempt && ctx.Err() == nil {
			s.gw.Log.Warn("report run failed; will retry", "report_id", rep.ID, "run_id", runID, "err", err)
			return err
		}
		s.gw.Log.Error("report run failed", "report_id", rep.ID, "run_id", runID, "refused", refused, "err", err)
		ctx := context.WithoutCancel(ctx)
		if ferr := store.InTx(ctx, s.gw.Pool, func(tx pgx.Tx) error {
			if refused {
				if err := s.tellOwner(ctx, tx, rep, runID); err != nil {
					return err
				}
			}
			return store.FinishReportRun(ctx, tx, runID, store.RunFailed, err.Error(), s.gw.Now())
		}); ferr != nil {
			return ferr
		}
		return fmt.Errorf("%w: %w", errReportFailed, err)
	}
	return store.InTx(ctx, s.gw.Pool, func(tx pgx.Tx) error {
		// Two runs to one chat at once (a tick and a run-now) would
		// otherwise interleave their parts: the outbox keeps a chat's
		// parts in the order their rows were written.
		chats := make([]gateway.Address, len(rep.Targets))
		for i, t := range rep.Targets {
			chats[i] = targetAddress(t)
		}
		if err := s.gw.Outbox.Lock(ctx, tx, chats...); err != nil {
			return err
		}
		for i, t := range rep.Targets {
			if err := s.queueReport(ctx, tx, runID, i, t, content); err != nil {
				return err
			}
		}
		return store.FinishReportRun(ctx, tx, runID, store.RunDone, "", s.gw.Now())
	})
}

// queueReport writes one target's message (and picture, where the
// channel shows pictures; a text table otherwise) to the outbox and
// records the delivery. A target whose channel is gone is recorded as a
// failed delivery.
func (s *Service) queueReport(ctx context.Context, tx pgx.Tx, runID int64, i int, t store.ReportTarget, c reportContent) error {
	key := reportKey(runID, i)
	d := store.ReportDelivery{RunID: runID, Target: i, Channel: t.Channel, Account: t.Account, ChatID: t.ChatID, ReplyKey: key}
	ch, ok := s.gw.Channel(t.Channel)
	if !ok {
		d.Error = fmt.Sprintf("no channel %q is configured", t.Channel)
		return store.InsertReportDelivery(ctx, tx, d)
	}
	lim := ch.Limits(t.Account)
	text := c.text
	if c.chart != nil && !lim.Images {
		text += "\n\n" + Table(*c.chart)
	}
	if _, err := s.gw.Outbox.Queue(ctx, tx, key, targetAddress(t), text); err != nil {
		return err
	}
	if c.png != nil && lim.Images {
		if err := s.gw.Outbox.QueueImage(ctx, tx, key+":chart", targetAddress(t), &channels.Image{Name: "report.png", PNG: c.png}); err != nil {
			return err
		}
	}
	return store.InsertReportDelivery(ctx, tx, d)
}

// tellOwner queues, in tx, a note to the owner's private chat that run
// runID of rep was refused, where the owner's channel can push there; else
// the refusal is only recorded (and logged).
func (s *Service) tellOwner(ctx context.Context, tx pgx.Tx, rep store.Report, runID int64) error {
	var spec Spec
	_ = json.Unmarshal(rep.Spec, &spec) // a refused run had a readable spec, of a skill
	o := rep.Owner
	targets, err := s.resolveTargets(ctx, []TargetRef{{Channel: o.Channel, Account: o.Account, ChatType: channels.ChatSingle, ChatID: o.User}})
	if err != nil {
		s.gw.Log.Warn("report owner cannot be told of a refused run", "report_id", rep.ID, "run_id", runID, "err", err)
		return nil
	}
	_, err = s.gw.Outbox.Queue(ctx, tx, fmt.Sprintf("report:%d:owner", runID), targetAddress(targets[0]),
		fmt.Sprintf(s.gw.Config.Messages.Reports.RunRefused, rep.Name, cmp.Or(s.gw.Skills.Load().Spec(spec.Skill).DisplayName, spec.Skill)))
	return err
}

// makeReport runs the report's skill or prompt as its owner, with the
// owner's departments as they are now.
func (s *Service) makeReport(ctx context.Context, rep store.Report, run store.ReportRun) (reportContent, error) {
	var spec Spec
	if err := json.Unmarshal(rep.Spec, &spec); err != nil {
		return reportContent{}, fmt.Errorf("%w: stored spec: %v", ErrBadReport, err)
	}
	depts, deptErr := s.ownerDepartments(ctx, rep.Owner)
	if deptErr != nil {
		s.gw.Log.Warn("report owner's departments unknown; department-limited skills are refused",
			"report_id", rep.ID, "run_id", run.ID, "err", deptErr)
	}
	caller := ownerCaller(rep.Owner, depts, fmt.Sprintf("report-%d-%d", rep.ID, run.ID))
	fromChat := rep.CreatedBy != store.CreatedByAdmin
	at := cmp.Or(ptrTime(run.FireAt), run.CreatedAt)
	if loc, err := time.LoadLocation(rep.TZ); err == nil {
		at = at.In(loc)
	}
	if spec.Prompt != "" {
		text, err := s.promptReport(ctx, caller, spec.Prompt, fromChat)
		return reportContent{text: text}, err
	}
	if fromChat {
		// Checked again at every run: the skill's definition may have
		// changed since the report was made.
		if t := s.reportSkill(caller, spec.Skill); t != nil {
			if err := s.writeSkillRefusal(t.Spec()); err != nil {
				return reportContent{}, err
			}
		}
	}
	res, err := s.gw.Skills.Load().Call(ctx, caller, spec.Skill, spec.Args)
	if err != nil {
		if deptErr != nil && errors.Is(err, skills.ErrAccessDenied) {
			err = fmt.Errorf("%w (%w: %w)", err, errDepartmentsUnknown, deptErr)
		}
		return reportContent{}, err
	}
	if res.Confirm != nil || res.Async != nil {
		return reportContent{}, fmt.Errorf("%w: skill %s asks for confirmation or answers later", ErrBadReport, spec.Skill)
	}
	var data any
	if err := json.Unmarshal(res.Body, &data); err != nil {
		data = string(res.Body)
	}
	text, err := reportText(spec, rep.Name, at, data)
	if err != nil {
		return reportContent{}, err
	}
	c := reportContent{text: agent.MaskedText(text)}
	if spec.Chart != nil {
		chart, err := chartFrom(*spec.Chart, data)
		if err != nil {
			return reportContent{}, err
		}
		if c.png, err = RenderPNG(chart); err != nil {
			return reportContent{}, err
		}
		c.chart = &chart
	}
	return c, nil
}

func ptrTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// reportText renders the report's template over the skill's answer.
func reportText(spec Spec, name string, at time.Time, data any) (string, error) {
	src := spec.Template
	if src == "" {
		src = "**{{.Report}}**（{{.Time}}）\n\n{{with .Data.summary}}{{.}}{{end}}"
		if _, ok := data.(map[string]any); !ok {
			src = "**{{.Report}}**（{{.Time}}）\n\n{{.Data}}"
		}
	}
	tmpl, err := template.New("report").Option("missingkey=zero").Parse(src)
	if err != nil {
		return "", fmt.Errorf("%w: template: %v", ErrBadReport, err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, map[string]any{"Data": data, "Report": name, "Time": at.Format("2006-01-02 15:04")}); err != nil {
		return "", fmt.Errorf("%w: template: %v", ErrBadReport, err)
	}
	return strings.TrimSpace(b.String()), nil
}

// promptReport runs the agent on prompt as the owner, with the owner's
// skills, and returns its answer. A report made in chat (fromChat) is
// offered only the skills that may run unattended in one (read-only, or
// reports: allow).
func (s *Service) promptReport(ctx context.Context, caller skills.Caller, prompt string, fromChat bool) (string, error) {
	turn, err := s.gw.Agent.NewTurn(ctx, gateway.TurnInput{Caller: caller, Text: prompt, Unattended: fromChat})
	if err != nil {
		return "", fmt.Errorf("report prompt: %w", err)
	}
	res, err := s.gw.Agent.Run(ctx, caller.Channel, turn, nil, nil)
	if err != nil {
		return "", fmt.Errorf("report prompt: %w", err)
	}
	if res.StopReason != agent.StopFinished || strings.TrimSpace(res.Reply) == "" {
		return "", fmt.Errorf("%w: the agent stopped with %s", ErrBadReport, res.StopReason)
	}
	return res.Reply, nil
}

// RenderReport makes report id's content as a run would, without sending
// or recording it: its text and, for a report with a chart, the PNG (for
// `hermes demo` and previews). owner nil: the operator.
func (s *Service) RenderReport(ctx context.Context, id int64, owner *store.ReportOwner) (string, []byte, error) {
	rep, err := store.GetReport(ctx, s.gw.Pool, id, owner)
	if err != nil {
		return "", nil, err
	}
	c, err := s.makeReport(ctx, rep, store.ReportRun{ID: 0, CreatedAt: s.gw.Now()})
	return c.text, c.png, err
}
