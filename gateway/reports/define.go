package reports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/reports/schedule"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// Catch-up policies of a report (reports.catch_up).
const (
	CatchUpRunOnce = "run_once" // a tick missed while every replica was down runs once at start
	CatchUpSkip    = "skip"     // it is skipped; the next tick runs
)

// ErrBadReport: a report definition that cannot be saved; the message
// says what is wrong. Nothing was saved.
var ErrBadReport = errors.New("bad report")

// maxReportName bounds a report's name in characters.
const maxReportName = 64

// Spec is what a report sends: a skill's answer formatted by a
// template, or the agent's answer to a prompt. Stored as JSON.
type Spec struct {
	// Skill is called as the owner with Args (a JSON object).
	Skill string          `json:"skill,omitempty"`
	Args  json.RawMessage `json:"args,omitempty"`
	// Template is a Go text/template over {{.Data}} (the skill's decoded
	// JSON answer), {{.Report}} (the name) and {{.Time}} (the fire time,
	// "2006-01-02 15:04" in the report's zone). Default: the answer's
	// "summary" field.
	Template string `json:"template,omitempty"`
	// Prompt is run by the agent, with the owner's skills; its answer is
	// the report.
	Prompt string `json:"prompt,omitempty"`
	// Chart draws rows of the skill's answer (skill reports only).
	Chart *ChartSpec `json:"chart,omitempty"`
}

// TargetRef names a chat a report goes to.
type TargetRef struct {
	Channel  string `json:"channel"`
	Account  string `json:"account"`
	ChatType string `json:"chat_type"` // channels.ChatSingle (a user) or channels.ChatGroup
	ChatID   string `json:"chat_id"`
}

// NewReport is a report to create.
type NewReport struct {
	Name    string      `json:"name"`
	Cron    string      `json:"cron"`
	TZ      string      `json:"time_zone,omitempty"` // default reports.time_zone
	CatchUp string      `json:"catch_up,omitempty"`  // default run_once
	Spec    Spec        `json:"spec"`
	Targets []TargetRef `json:"targets"`
	// Owner is who creates it; never taken from a request's body, always
	// from the verified sender (chat) or the operator's flags (CLI).
	Owner store.ReportOwner `json:"-"`
	// ByAdmin: an operator creates it (`hermes reports add`, the demo), so
	// the limits of reports made in chat do not hold (reports.min_interval,
	// reports.max_per_user, write skills). False, the default, for
	// anything an employee asks for.
	ByAdmin bool `json:"-"`
}

// ownerCaller is the identity a report's skills see: its owner's, with
// depts the owner's departments now (ownerDepartments), never the ones
// stored at creation.
func ownerCaller(o store.ReportOwner, depts []string, traceID string) skills.Caller {
	return skills.Caller{UserID: o.User, Name: o.Name, Channel: o.Channel, Account: o.Account, CorpID: o.Corp,
		ChatID: o.Chat, Depts: depts, TraceID: traceID}
}

// ownerDepartments are the owner's departments as they are now, for skill
// access rules (Services.Departments), never the ones stored at creation. A
// failed lookup's error is returned for the caller to decide (a run
// retries it); with none, skills limited to departments are refused.
func (s *Service) ownerDepartments(ctx context.Context, o store.ReportOwner) ([]string, error) {
	return s.gw.Departments(ctx, o.Channel, o.Account, o.User)
}

// reportSkill is the tool named skill as caller may use it, nil when the
// caller may not (or there is none).
func (s *Service) reportSkill(caller skills.Caller, skill string) skills.Tool {
	for _, t := range s.gw.Skills.Load().ToolsFor(caller) {
		if t.Spec().Name == skill {
			return t
		}
	}
	return nil
}

// checkedReport is a NewReport that passed every check, ready to store.
type checkedReport struct {
	report   store.Report
	schedule schedule.Schedule
}

// checkReport validates nr and resolves its targets' addresses. Errors
// wrap ErrBadReport (and channels.ErrCannotPush for a chat the bot cannot
// reach) and say what to fix.
func (s *Service) checkReport(ctx context.Context, nr NewReport) (checkedReport, error) {
	bad := func(format string, args ...any) (checkedReport, error) {
		return checkedReport{}, fmt.Errorf("%w: "+format, append([]any{ErrBadReport}, args...)...)
	}
	name := strings.TrimSpace(nr.Name)
	if name == "" || utf8.RuneCountInString(name) > maxReportName {
		return bad("name: required, at most %d characters", maxReportName)
	}
	if nr.Owner.User == "" || nr.Owner.Channel == "" {
		return bad("owner: a report needs the user it runs as")
	}
	if nr.TZ == "" {
		nr.TZ = s.gw.Config.Reports.TimeZone
	}
	sch, err := schedule.Parse(nr.Cron, nr.TZ)
	if err != nil {
		return bad("%v", err)
	}
	createdBy := store.CreatedByAdmin
	if !nr.ByAdmin {
		createdBy = store.CreatedByChat
		if err := s.checkFrequency(sch); err != nil {
			return checkedReport{}, err
		}
		if err := s.checkReportCount(ctx, s.gw.Pool, nr.Owner); err != nil {
			return checkedReport{}, err
		}
	}
	if nr.CatchUp == "" {
		nr.CatchUp = CatchUpRunOnce
	}
	if nr.CatchUp != CatchUpRunOnce && nr.CatchUp != CatchUpSkip {
		return bad("catch_up: %q, want run_once or skip", nr.CatchUp)
	}
	depts, err := s.ownerDepartments(ctx, nr.Owner)
	if err != nil {
		s.gw.Log.Warn("report owner's departments unknown; department-limited skills are refused", "user", nr.Owner.User, "err", err)
	}
	nr.Owner.Depts = depts // kept for the record; a run looks them up again
	if err := s.checkSpec(nr.Spec, ownerCaller(nr.Owner, depts, ""), nr.ByAdmin); err != nil {
		return checkedReport{}, err
	}
	targets, err := s.resolveTargets(ctx, nr.Targets)
	if err != nil {
		return checkedReport{}, err
	}
	spec, err := json.Marshal(nr.Spec)
	if err != nil {
		return bad("spec: %v", err)
	}
	now := s.gw.Now()
	return checkedReport{schedule: sch, report: store.Report{
		Name: name, Owner: nr.Owner, Cron: sch.Expr, TZ: nr.TZ, CatchUp: nr.CatchUp, Spec: spec, Targets: targets,
		LastFireAt: now, CreatedAt: now, CreatedBy: createdBy,
	}}, nil
}

// checkSpec checks the content: one of skill or prompt, a skill the owner
// (caller) may use that runs unattended and, in a report made in chat,
// reads only or allows it, a template and chart that parse.
func (s *Service) checkSpec(spec Spec, caller skills.Caller, byAdmin bool) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadReport}, args...)...)
	}
	switch {
	case (spec.Skill == "") == (strings.TrimSpace(spec.Prompt) == ""):
		return bad("give either a skill or a prompt")
	case spec.Prompt != "" && spec.Chart != nil:
		return bad("chart: only a skill report has rows to draw")
	case spec.Prompt != "":
		return nil
	}
	if len(spec.Args) > 0 {
		var obj map[string]any
		if json.Unmarshal(spec.Args, &obj) != nil {
			return bad("args: must be a JSON object")
		}
	}
	tool := s.reportSkill(caller, spec.Skill)
	if tool == nil {
		return bad("skill %q: unknown, or %s may not use it", spec.Skill, caller.UserID)
	}
	ts := tool.Spec()
	if ts.Confirm || ts.Async {
		return bad("skill %q asks for confirmation or answers later; a report runs unattended", spec.Skill)
	}
	if !byAdmin {
		if err := s.writeSkillRefusal(ts); err != nil {
			return err
		}
	}
	if _, err := template.New("report").Parse(spec.Template); err != nil {
		return bad("template: %v", err)
	}
	if c := spec.Chart; c != nil {
		if !slices.Contains([]string{ChartBar, ChartLine, ChartPie}, c.Type) {
			return bad("chart.type: %q, want bar, line or pie", c.Type)
		}
		if c.Rows == "" || c.Label == "" || len(c.Values) == 0 {
			return bad("chart: rows, label and values are required")
		}
	}
	return nil
}

// resolveTargets asks each target's channel for the address of an
// unprompted message there.
func (s *Service) resolveTargets(ctx context.Context, refs []TargetRef) ([]store.ReportTarget, error) {
	if len(refs) == 0 || len(refs) > s.gw.Config.Reports.MaxTargets {
		return nil, fmt.Errorf("%w: targets: between 1 and %d (reports.max_targets), got %d", ErrBadReport, s.gw.Config.Reports.MaxTargets, len(refs))
	}
	out := make([]store.ReportTarget, 0, len(refs))
	for i, t := range refs {
		if t.ChatType != channels.ChatSingle && t.ChatType != channels.ChatGroup {
			return nil, fmt.Errorf("%w: targets[%d].chat_type: %q, want single or group", ErrBadReport, i, t.ChatType)
		}
		ch, ok := s.gw.Channel(t.Channel)
		if !ok {
			return nil, fmt.Errorf("%w: targets[%d]: no channel %q is configured", ErrBadReport, i, t.Channel)
		}
		p, ok := ch.(channels.Pusher)
		if !ok {
			return nil, fmt.Errorf("%w: targets[%d]: channel %q cannot send unprompted messages: %w", ErrBadReport, i, t.Channel, channels.ErrCannotPush)
		}
		addr, err := p.PushAddress(ctx, t.Account, t.ChatType, t.ChatID)
		if err != nil {
			return nil, fmt.Errorf("%w: targets[%d]: %w", ErrBadReport, i, err)
		}
		if err := s.checkFirstContact(ctx, p, t); err != nil {
			return nil, fmt.Errorf("targets[%d]: %w", i, err)
		}
		out = append(out, store.ReportTarget{Channel: t.Channel, Account: t.Account, ChatType: t.ChatType, ChatID: t.ChatID, ReplyTo: addr})
	}
	return out, nil
}

// CreateReport checks nr and stores it. Errors wrap ErrBadReport (a
// *Refusal for a limit of reports made in chat) or
// store.ErrReportExists; nothing is saved then.
func (s *Service) CreateReport(ctx context.Context, nr NewReport) (store.Report, error) {
	c, err := s.checkReport(ctx, nr)
	if err != nil {
		return store.Report{}, err
	}
	err = store.InTx(ctx, s.gw.Pool, func(tx pgx.Tx) error {
		if c.report.CreatedBy == store.CreatedByChat {
			// Counted again under the owner's lock: two confirmations at
			// once cannot both take the last place.
			if err := store.LockReportOwner(ctx, tx, c.report.Owner); err != nil {
				return err
			}
			if err := s.checkReportCount(ctx, tx, c.report.Owner); err != nil {
				return err
			}
		}
		c.report.ID, err = store.InsertReport(ctx, tx, c.report)
		return err
	})
	return c.report, err
}

// PreviewReport checks nr and says in words when it will run, with its
// next three fire times, for the confirmation before it is created.
func (s *Service) PreviewReport(ctx context.Context, nr NewReport) (when string, next []time.Time, err error) {
	c, err := s.checkReport(ctx, nr)
	if err != nil {
		return "", nil, err
	}
	now := s.gw.Now()
	return s.gw.Config.Messages.Reports.Schedule.Describe(c.schedule, now), c.schedule.NextN(now, 3), nil
}

// Status is a report with what its schedule means now.
type Status struct {
	store.Report
	When string
	Next time.Time // zero while paused
}

// ListReports returns owner's reports (every report with a nil owner).
func (s *Service) ListReports(ctx context.Context, owner *store.ReportOwner) ([]Status, error) {
	rs, err := store.ListReports(ctx, s.gw.Pool, owner)
	if err != nil {
		return nil, err
	}
	now := s.gw.Now()
	out := make([]Status, 0, len(rs))
	for _, r := range rs {
		st := Status{Report: r}
		if sch, err := schedule.Parse(r.Cron, r.TZ); err == nil {
			st.When = s.gw.Config.Messages.Reports.Schedule.Describe(sch, now)
			if !r.Paused {
				st.Next = sch.Next(now)
			}
		}
		out = append(out, st)
	}
	return out, nil
}
