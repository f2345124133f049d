package gateway

import (
	"cmp"
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
	"github.com/hermes-gw/hermes/gateway/reports"
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

// Limits of reports employees create in chat; each comes as a
// *ReportRefusal, which also wraps ErrBadReport.
var (
	// ErrReportTooFrequent: two coming fires are closer than
	// reports.min_interval.
	ErrReportTooFrequent = errors.New("report fires more often than reports.min_interval")
	// ErrTooManyReports: the owner already has reports.max_per_user
	// reports made in chat.
	ErrTooManyReports = errors.New("owner has reports.max_per_user reports")
	// ErrReportWriteSkill: the skill changes data and does not allow
	// reports made in chat (skills' "reports: allow").
	ErrReportWriteSkill = errors.New("a skill that changes data, in a report made in chat")
)

// ReportRefusal is a report refused by a limit of reports employees
// create (Kind is ErrReportTooFrequent, ErrTooManyReports or
// ErrReportWriteSkill) or by a chat the bot may not push to yet
// (channels.ErrCannotPush). Sentence says why to the user
// (messages.reports, Chinese by default): the agent relays it, and a
// refusal at 「确认」 is shown as it is. It wraps ErrBadReport and Kind.
type ReportRefusal struct {
	Kind     error
	Sentence string
}

func (r *ReportRefusal) Error() string   { return r.Kind.Error() + ": " + r.Sentence }
func (r *ReportRefusal) Unwrap() []error { return []error{ErrBadReport, r.Kind} }

// maxReportName bounds a report's name in characters.
const maxReportName = 64

// ReportSpec is what a report sends: a skill's answer formatted by a
// template, or the agent's answer to a prompt. Stored as JSON.
type ReportSpec struct {
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

// ChartSpec says how a skill's answer becomes a chart: Rows names the
// answer's array of objects, Label the field of each row that labels it,
// Values the numeric fields drawn as series (named by Names, default the
// field names).
type ChartSpec struct {
	Type   string   `json:"type"` // bar, line or pie
	Title  string   `json:"title,omitempty"`
	Rows   string   `json:"rows"`
	Label  string   `json:"label"`
	Values []string `json:"values"`
	Names  []string `json:"names,omitempty"`
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
	Spec    ReportSpec  `json:"spec"`
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
// access rules (departmentsOf), never the ones stored at creation. A
// failed lookup's error is returned for the caller to decide (a run
// retries it); with none, skills limited to departments are refused.
func (g *Gateway) ownerDepartments(ctx context.Context, o store.ReportOwner) ([]string, error) {
	return g.departmentsOf(ctx, o.Channel, o.Account, o.User)
}

// reportSkill is the tool named skill as caller may use it, nil when the
// caller may not (or there is none).
func (g *Gateway) reportSkill(caller skills.Caller, skill string) skills.Tool {
	for _, t := range g.skills.Load().ToolsFor(caller) {
		if t.Spec().Name == skill {
			return t
		}
	}
	return nil
}

// writeSkillRefusal refuses a skill that changes data in a report made in
// chat, unless its definition allows it (reports: allow).
func (g *Gateway) writeSkillRefusal(spec skills.Spec) error {
	if spec.ReportsAllowed {
		return nil
	}
	return &ReportRefusal{Kind: ErrReportWriteSkill,
		Sentence: fmt.Sprintf(g.cfg.Messages.Reports.WriteSkill, cmp.Or(spec.DisplayName, spec.Name))}
}

// checkedReport is a NewReport that passed every check, ready to store.
type checkedReport struct {
	report   store.Report
	schedule reports.Schedule
}

// checkReport validates nr and resolves its targets' addresses. Errors
// wrap ErrBadReport (and channels.ErrCannotPush for a chat the bot cannot
// reach) and say what to fix.
func (g *Gateway) checkReport(ctx context.Context, nr NewReport) (checkedReport, error) {
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
		nr.TZ = g.cfg.Reports.TimeZone
	}
	sch, err := reports.ParseSchedule(nr.Cron, nr.TZ)
	if err != nil {
		return bad("%v", err)
	}
	createdBy := store.CreatedByAdmin
	if !nr.ByAdmin {
		createdBy = store.CreatedByChat
		if err := g.checkFrequency(sch); err != nil {
			return checkedReport{}, err
		}
		if err := g.checkReportCount(ctx, g.pool, nr.Owner); err != nil {
			return checkedReport{}, err
		}
	}
	if nr.CatchUp == "" {
		nr.CatchUp = CatchUpRunOnce
	}
	if nr.CatchUp != CatchUpRunOnce && nr.CatchUp != CatchUpSkip {
		return bad("catch_up: %q, want run_once or skip", nr.CatchUp)
	}
	depts, err := g.ownerDepartments(ctx, nr.Owner)
	if err != nil {
		g.log.Warn("report owner's departments unknown; department-limited skills are refused", "user", nr.Owner.User, "err", err)
	}
	nr.Owner.Depts = depts // kept for the record; a run looks them up again
	if err := g.checkSpec(nr.Spec, ownerCaller(nr.Owner, depts, ""), nr.ByAdmin); err != nil {
		return checkedReport{}, err
	}
	targets, err := g.resolveTargets(ctx, nr.Targets)
	if err != nil {
		return checkedReport{}, err
	}
	spec, err := json.Marshal(nr.Spec)
	if err != nil {
		return bad("spec: %v", err)
	}
	now := g.now()
	return checkedReport{schedule: sch, report: store.Report{
		Name: name, Owner: nr.Owner, Cron: sch.Expr, TZ: nr.TZ, CatchUp: nr.CatchUp, Spec: spec, Targets: targets,
		LastFireAt: now, CreatedAt: now, CreatedBy: createdBy,
	}}, nil
}

// checkFrequency refuses a schedule two of whose coming fires are closer
// than reports.min_interval (the fire times themselves, not the text).
func (g *Gateway) checkFrequency(sch reports.Schedule) error {
	least := g.cfg.Reports.MinInterval
	a, b, tooClose := sch.TooClose(g.now(), least)
	if !tooClose {
		return nil
	}
	layout := "2006-01-02 15:04"
	if a.Second() != 0 || b.Second() != 0 {
		layout += ":05"
	}
	return &ReportRefusal{Kind: ErrReportTooFrequent, Sentence: fmt.Sprintf(g.cfg.Messages.Reports.TooFrequent,
		durationCN(least), a.Format(layout), b.Format(layout), durationCN(b.Sub(a)))}
}

// checkReportCount refuses a report over reports.max_per_user reports
// the owner made in chat.
func (g *Gateway) checkReportCount(ctx context.Context, q store.Querier, owner store.ReportOwner) error {
	n, err := store.CountReports(ctx, q, owner, store.CreatedByChat)
	if err != nil {
		return err
	}
	if most := g.cfg.Reports.MaxPerUser; n >= most {
		return &ReportRefusal{Kind: ErrTooManyReports, Sentence: fmt.Sprintf(g.cfg.Messages.Reports.TooMany, most)}
	}
	return nil
}

// durationCN says d in Chinese: "1 小时", "1 小时 30 分钟", "10 秒".
func durationCN(d time.Duration) string {
	var parts []string
	if h := d / time.Hour; h > 0 {
		parts = append(parts, fmt.Sprintf("%d 小时", h))
	}
	if m := d % time.Hour / time.Minute; m > 0 {
		parts = append(parts, fmt.Sprintf("%d 分钟", m))
	}
	if sec := d % time.Minute / time.Second; sec > 0 || len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%d 秒", sec))
	}
	return strings.Join(parts, " ")
}

// checkSpec checks the content: one of skill or prompt, a skill the owner
// (caller) may use that runs unattended and, in a report made in chat,
// reads only or allows it, a template and chart that parse.
func (g *Gateway) checkSpec(spec ReportSpec, caller skills.Caller, byAdmin bool) error {
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
	tool := g.reportSkill(caller, spec.Skill)
	if tool == nil {
		return bad("skill %q: unknown, or %s may not use it", spec.Skill, caller.UserID)
	}
	ts := tool.Spec()
	if ts.Confirm || ts.Async {
		return bad("skill %q asks for confirmation or answers later; a report runs unattended", spec.Skill)
	}
	if !byAdmin {
		if err := g.writeSkillRefusal(ts); err != nil {
			return err
		}
	}
	if _, err := template.New("report").Parse(spec.Template); err != nil {
		return bad("template: %v", err)
	}
	if c := spec.Chart; c != nil {
		if !slices.Contains([]string{reports.ChartBar, reports.ChartLine, reports.ChartPie}, c.Type) {
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
func (g *Gateway) resolveTargets(ctx context.Context, refs []TargetRef) ([]store.ReportTarget, error) {
	if len(refs) == 0 || len(refs) > g.cfg.Reports.MaxTargets {
		return nil, fmt.Errorf("%w: targets: between 1 and %d (reports.max_targets), got %d", ErrBadReport, g.cfg.Reports.MaxTargets, len(refs))
	}
	out := make([]store.ReportTarget, 0, len(refs))
	for i, t := range refs {
		if t.ChatType != channels.ChatSingle && t.ChatType != channels.ChatGroup {
			return nil, fmt.Errorf("%w: targets[%d].chat_type: %q, want single or group", ErrBadReport, i, t.ChatType)
		}
		ch, ok := g.channels[t.Channel]
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
		if err := g.checkFirstContact(ctx, p, t); err != nil {
			return nil, fmt.Errorf("targets[%d]: %w", i, err)
		}
		out = append(out, store.ReportTarget{Channel: t.Channel, Account: t.Account, ChatType: t.ChatType, ChatID: t.ChatID, ReplyTo: addr})
	}
	return out, nil
}

// checkFirstContact refuses a target on an account that may push only
// into chats that wrote to it first, when no message from that chat has
// arrived on that account (the inbox knows; the channel does not).
func (g *Gateway) checkFirstContact(ctx context.Context, p channels.Pusher, t TargetRef) error {
	fc, ok := p.(channels.FirstContactPusher)
	if !ok || !fc.PushNeedsFirstContact(t.Account) {
		return nil
	}
	wrote, err := store.ChatHasWritten(ctx, g.pool, t.Channel, t.Account, t.ChatType, t.ChatID)
	if err != nil || wrote {
		return err
	}
	return &ReportRefusal{Kind: channels.ErrCannotPush, Sentence: fmt.Sprintf(g.cfg.Messages.Reports.FirstContact, t.ChatID)}
}

// CreateReport checks nr and stores it. Errors wrap ErrBadReport (a
// *ReportRefusal for a limit of reports made in chat) or
// store.ErrReportExists; nothing is saved then.
func (g *Gateway) CreateReport(ctx context.Context, nr NewReport) (store.Report, error) {
	c, err := g.checkReport(ctx, nr)
	if err != nil {
		return store.Report{}, err
	}
	err = store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
		if c.report.CreatedBy == store.CreatedByChat {
			// Counted again under the owner's lock: two confirmations at
			// once cannot both take the last place.
			if err := store.LockReportOwner(ctx, tx, c.report.Owner); err != nil {
				return err
			}
			if err := g.checkReportCount(ctx, tx, c.report.Owner); err != nil {
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
func (g *Gateway) PreviewReport(ctx context.Context, nr NewReport) (when string, next []time.Time, err error) {
	c, err := g.checkReport(ctx, nr)
	if err != nil {
		return "", nil, err
	}
	now := g.now()
	return c.schedule.Describe(now), c.schedule.NextN(now, 3), nil
}

// ReportStatus is a report with what its schedule means now.
type ReportStatus struct {
	store.Report
	When string
	Next time.Time // zero while paused
}

// ListReports returns owner's reports (every report with a nil owner).
func (g *Gateway) ListReports(ctx context.Context, owner *store.ReportOwner) ([]ReportStatus, error) {
	rs, err := store.ListReports(ctx, g.pool, owner)
	if err != nil {
		return nil, err
	}
	now := g.now()
	out := make([]ReportStatus, 0, len(rs))
	for _, r := range rs {
		st := ReportStatus{Report: r}
		if sch, err := reports.ParseSchedule(r.Cron, r.TZ); err == nil {
			st.When = sch.Describe(now)
			if !r.Paused {
				st.Next = sch.Next(now)
			}
		}
		out = append(out, st)
	}
	return out, nil
}
