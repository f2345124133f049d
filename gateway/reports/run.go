package gateway

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
	"github.com/hermes-gw/hermes/gateway/reports"
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
func targetAddress(t store.ReportTarget) Address {
	return Address{Channel: t.Channel, Account: t.Account, ChatID: t.ChatID, ReplyTo: t.ReplyTo}
}

// reportContent is what a run sends to every target.
type reportContent struct {
	text  string
	chart *reports.Chart
	png   []byte
}

// runReport makes the report of run runID as its owner and queues it for
// every target through the outbox, in one transaction with the run's
// record. A failure is retried; on the last attempt (or one retrying
// cannot fix) the run is recorded as failed and errReportFailed returned.
func (g *Gateway) runReport(ctx context.Context, runID int64, lastAttempt bool) error {
	run, err := store.GetReportRun(ctx, g.pool, runID)
	if err != nil || run.Status == store.RunDone || run.Status == store.RunFailed {
		return err
	}
	rep, err := store.GetReport(ctx, g.pool, run.ReportID, nil)
	if err != nil {
		return err
	}
	if err := store.StartReportRun(ctx, g.pool, runID, g.now()); err != nil {
		return err
	}
	content, err := g.makeReport(ctx, rep, run)
	if err != nil {
		// Refused: the owner may no longer run the skill this way (access
		// by the departments they have now, a write skill in a report made
		// in chat, a skill gone).
		refused := errors.Is(err, skills.ErrAccessDenied) || errors.Is(err, skills.ErrUnknownSkill) ||
			errors.Is(err, ErrReportWriteSkill)
		permanent := (refused || errors.Is(err, ErrBadReport) || errors.Is(err, reports.ErrBadChart)) &&
			!errors.Is(err, errDepartmentsUnknown)
		if !permanent && !lastAttempt && ctx.Err() == nil {
			g.log.Warn("report run failed; will retry", "report_id", rep.ID, "run_id", runID, "err", err)
			return err
		}
		g.log.Error("report run failed", "report_id", rep.ID, "run_id", runID, "refused", refused, "err", err)
		ctx := context.WithoutCancel(ctx)
		if ferr := store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
			if refused {
				if err := g.tellOwner(ctx, tx, rep, runID); err != nil {
					return err
				}
			}
			return store.FinishReportRun(ctx, tx, runID, store.RunFailed, err.Error(), g.now())
		}); ferr != nil {
			return ferr
		}
		return fmt.Errorf("%w: %w", errReportFailed, err)
	}
	return store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
		// Two runs to one chat at once (a tick and a run-now) would
		// otherwise interleave their parts: the outbox keeps a chat's
		// parts in the order their rows were written.
		chats := make([]string, len(rep.Targets))
		for i, t := range rep.Targets {
			chats[i] = targetAddress(t).orderKey()
		}
		if err := store.LockConversations(ctx, tx, chats); err != nil {
			return err
		}
		for i, t := range rep.Targets {
			if err := g.queueReport(ctx, tx, runID, i, t, content); err != nil {
				return err
			}
		}
		return store.FinishReportRun(ctx, tx, runID, store.RunDone, "", g.now())
	})
}

// queueReport writes one target's message (and picture, where the
// channel shows pictures; a text table otherwise) to the outbox and
// records the delivery. A target whose channel is gone is recorded as a
// failed delivery.
func (g *Gateway) queueReport(ctx context.Context, tx pgx.Tx, runID int64, i int, t store.ReportTarget, c reportContent) error {
	key := reportKey(runID, i)
	d := store.ReportDelivery{RunID: runID, Target: i, Channel: t.Channel, Account: t.Account, ChatID: t.ChatID, ReplyKey: key}
	ch, ok := g.channels[t.Channel]
	if !ok {
		d.Error = fmt.Sprintf("no channel %q is configured", t.Channel)
		return store.InsertReportDelivery(ctx, tx, d)
	}
	lim := ch.Limits(t.Account)
	text := c.text
	if c.chart != nil && !lim.Images {
		text += "\n\n" + reports.Table(*c.chart)
	}
	if _, err := g.outbox.Queue(ctx, tx, key, targetAddress(t), text); err != nil {
		return err
	}
	if c.png != nil && lim.Images {
		if err := g.outbox.QueueImage(ctx, tx, key+":chart", targetAddress(t), &channels.Image{Name: "report.png", PNG: c.png}); err != nil {
			return err
		}
	}
	return store.InsertReportDelivery(ctx, tx, d)
}

// tellOwner queues, in tx, a note to the owner's private chat that run
// runID of rep was refused, where the owner's channel can push there; else
// the refusal is only recorded (and logged).
func (g *Gateway) tellOwner(ctx context.Context, tx pgx.Tx, rep store.Report, runID int64) error {
	var spec ReportSpec
	_ = json.Unmarshal(rep.Spec, &spec) // a refused run had a readable spec, of a skill
	o := rep.Owner
	targets, err := g.resolveTargets(ctx, []TargetRef{{Channel: o.Channel, Account: o.Account, ChatType: channels.ChatSingle, ChatID: o.User}})
	if err != nil {
		g.log.Warn("report owner cannot be told of a refused run", "report_id", rep.ID, "run_id", runID, "err", err)
		return nil
	}
	_, err = g.outbox.Queue(ctx, tx, fmt.Sprintf("report:%d:owner", runID), targetAddress(targets[0]),
		fmt.Sprintf(g.cfg.Messages.Reports.RunRefused, rep.Name, cmp.Or(g.skillSpec(spec.Skill).DisplayName, spec.Skill)))
	return err
}

// makeReport runs the report's skill or prompt as its owner, with the
// owner's departments as they are now.
func (g *Gateway) makeReport(ctx context.Context, rep store.Report, run store.ReportRun) (reportContent, error) {
	var spec ReportSpec
	if err := json.Unmarshal(rep.Spec, &spec); err != nil {
		return reportContent{}, fmt.Errorf("%w: stored spec: %v", ErrBadReport, err)
	}
	depts, deptErr := g.ownerDepartments(ctx, rep.Owner)
	if deptErr != nil {
		g.log.Warn("report owner's departments unknown; department-limited skills are refused",
			"report_id", rep.ID, "run_id", run.ID, "err", deptErr)
	}
	caller := ownerCaller(rep.Owner, depts, fmt.Sprintf("report-%d-%d", rep.ID, run.ID))
	fromChat := rep.CreatedBy != store.CreatedByAdmin
	at := cmp.Or(ptrTime(run.FireAt), run.CreatedAt)
	if loc, err := time.LoadLocation(rep.TZ); err == nil {
		at = at.In(loc)
	}
	if spec.Prompt != "" {
		text, err := g.promptReport(ctx, caller, spec.Prompt, fromChat)
		return reportContent{text: text}, err
	}
	if fromChat {
		// Checked again at every run: the skill's definition may have
		// changed since the report was made.
		if t := g.reportSkill(caller, spec.Skill); t != nil {
			if err := g.writeSkillRefusal(t.Spec()); err != nil {
				return reportContent{}, err
			}
		}
	}
	res, err := g.skills.Load().Call(ctx, caller, spec.Skill, spec.Args)
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
		if c.png, err = reports.RenderPNG(chart); err != nil {
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
func reportText(spec ReportSpec, name string, at time.Time, data any) (string, error) {
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

// chartFrom reads the chart's rows out of the skill's answer.
func chartFrom(cs ChartSpec, data any) (reports.Chart, error) {
	obj, _ := data.(map[string]any)
	rows, ok := obj[cs.Rows].([]any)
	if !ok {
		return reports.Chart{}, fmt.Errorf("%w: the answer has no array %q", reports.ErrBadChart, cs.Rows)
	}
	c := reports.Chart{Type: cs.Type, Title: cs.Title, Series: make([]reports.Series, len(cs.Values))}
	for i, v := range cs.Values {
		c.Series[i].Name = v
		if i < len(cs.Names) {
			c.Series[i].Name = cs.Names[i]
		}
	}
	for _, r := range rows {
		row, _ := r.(map[string]any)
		c.Labels = append(c.Labels, fmt.Sprint(row[cs.Label]))
		for i, v := range cs.Values {
			n, ok := row[v].(float64)
			if !ok {
				return reports.Chart{}, fmt.Errorf("%w: row %q: %q is not a number", reports.ErrBadChart, row[cs.Label], v)
			}
			c.Series[i].Values = append(c.Series[i].Values, n)
		}
	}
	return c, c.Validate()
}

// promptReport runs the agent on prompt as the owner, with the owner's
// skills, and returns its answer. A report made in chat (fromChat) is
// offered only the skills that may run unattended in one (read-only, or
// reports: allow).
func (g *Gateway) promptReport(ctx context.Context, caller skills.Caller, prompt string, fromChat bool) (string, error) {
	var tools []skills.Tool
	for _, t := range g.skills.Load().ToolsFor(caller) {
		if !fromChat || t.Spec().ReportsAllowed {
			tools = append(tools, t)
		}
	}
	res, err := g.agent.Run(ctx, caller.Channel, agent.Turn{
		SessionID: caller.TraceID, RunID: caller.TraceID, SystemPrompt: g.cfg.Agent.SystemPrompt,
		UserText: prompt, Tools: tools,
	}, nil, nil)
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
func (g *Gateway) RenderReport(ctx context.Context, id int64, owner *store.ReportOwner) (string, []byte, error) {
	rep, err := store.GetReport(ctx, g.pool, id, owner)
	if err != nil {
		return "", nil, err
	}
	c, err := g.makeReport(ctx, rep, store.ReportRun{ID: 0, CreatedAt: g.now()})
	return c.text, c.png, err
}
