package reports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// Report management as tools the agent is offered in chat. They are built
// per run for the verified sender, who is the owner of what they create
// and the only one whose reports they see; creating and deleting return
// a Confirmation, so the gateway's 「确认」 runs them (CallConfirmed).
const (
	toolReportCreate = "report_create"
	toolReportList   = "report_list"
	toolReportPause  = "report_pause"
	toolReportResume = "report_resume"
	toolReportDelete = "report_delete"
	toolReportRunNow = "report_run_now"
)

// reportTriggers offer the tools when the user talks about reports.
// ("报表" alone is not one: it names reports that skills answer, e.g. a
// finance report.)
var reportTriggers = skills.Triggers{IntentContains: []string{"定时", "报告", "推送", "周报", "月报", "每周", "每天", "每月", "立即发送"}}

const idParams = `{"type":"object","properties":{"id":{"type":"integer","description":"report id from report_list"}},"required":["id"],"additionalProperties":false}`

// createParams is what the model fills in for report_create.
const createParams = `{"type":"object","properties":{
"name":{"type":"string","description":"short Chinese name, e.g. 上周工单统计"},
"cron":{"type":"string","description":"cron: minute hour day-of-month month day-of-week (5 fields), e.g. 0 9 * * 1 for Mondays 09:00"},
"time_zone":{"type":"string","description":"IANA zone; omit for the default"},
"skill":{"type":"string","description":"a skill whose answer is the report (called with args as the user)"},
"args":{"type":"object","description":"fixed arguments of the skill"},
"prompt":{"type":"string","description":"instead of skill: a request the assistant answers each time"},
"target":{"type":"string","enum":["this_chat","me"],"description":"this_chat: the chat of this conversation; me: the user's private chat"},
"catch_up":{"type":"string","enum":["run_once","skip"],"description":"a run missed during downtime: run once at start (default) or skip"}},
"required":["name","cron","target"],"additionalProperties":false}`

// reportTool is one management tool bound to the sender of one message.
type reportTool struct {
	*toolDef
	s  *Service
	in channels.Inbound // the message the run answers: who asks, from where
}

// toolDef is a management tool as every sender gets it: its spec and what
// a call does. The Service makes them once (every run is offered them).
type toolDef struct {
	spec skills.Spec
	call func(t *reportTool, ctx context.Context, args json.RawMessage) (skills.Result, error)
}

func (t *reportTool) Spec() skills.Spec { return t.spec }

func (t *reportTool) Call(ctx context.Context, args json.RawMessage) (skills.Result, error) {
	return t.call(t, ctx, args)
}

// ChatTools implements gateway.ChatToolFeature: the management tools for
// the sender of in.
func (s *Service) ChatTools(in channels.Inbound) []skills.Tool {
	s.defsOnce.Do(func() { s.defs = s.toolDefs() })
	tools := make([]skills.Tool, len(s.defs))
	for i := range s.defs {
		tools[i] = &reportTool{toolDef: &s.defs[i], s: s, in: in}
	}
	return tools
}

// toolDefs are the management tools' definitions.
func (s *Service) toolDefs() []toolDef {
	mk := func(name, display, desc, params string, readOnly, confirm bool,
		call func(*reportTool, context.Context, json.RawMessage) (skills.Result, error)) toolDef {
		return toolDef{call: call, spec: skills.Spec{Name: name, DisplayName: display, Description: desc,
			Parameters: json.RawMessage(params), ReadOnly: readOnly, Confirm: confirm, Triggers: reportTriggers}}
	}
	return []toolDef{
		mk(toolReportCreate, "创建定时报告", "Create a scheduled report sent to this chat or the user's private chat. "+
			"Turn the time the user says into a cron expression. Give exactly one of skill or prompt. "+
			fmt.Sprintf("Two runs must be at least %s apart; a skill that changes data is refused unless it allows reports. ", s.gw.Config.Reports.MinInterval)+
			"If it is refused, tell the user the reason as given.", createParams, false, true, (*reportTool).create),
		mk(toolReportList, "我的定时报告", "List the user's own scheduled reports with ids, schedule and next run.", `{"type":"object","properties":{}}`, true, false, (*reportTool).list),
		mk(toolReportPause, "暂停定时报告", "Pause one of the user's reports.", idParams, false, false, (*reportTool).pause),
		mk(toolReportResume, "恢复定时报告", "Resume a paused report.", idParams, false, false, (*reportTool).resume),
		mk(toolReportDelete, "删除定时报告", "Delete one of the user's reports.", idParams, false, true, (*reportTool).remove),
		mk(toolReportRunNow, "立即发送报告", "Send one of the user's reports now.", idParams, false, false, (*reportTool).runNow),
	}
}

// ownerOf is the owner a chat message speaks for: its verified sender.
func ownerOf(in channels.Inbound) store.ReportOwner {
	return store.ReportOwner{Channel: in.Channel, Account: in.Account, Corp: in.Sender.CorpID, User: in.Sender.UserID,
		Name: in.Sender.Name, Chat: in.ChatID, Depts: in.Sender.Dept}
}

// createArgs are report_create's arguments.
type createArgs struct {
	Name     string          `json:"name"`
	Cron     string          `json:"cron"`
	TimeZone string          `json:"time_zone"`
	Skill    string          `json:"skill"`
	Args     json.RawMessage `json:"args"`
	Prompt   string          `json:"prompt"`
	Target   string          `json:"target"`
	CatchUp  string          `json:"catch_up"`
}

// newReport is the report report_create's arguments describe, owned by
// the sender, and how the confirmation names its target.
func (t *reportTool) newReport(raw json.RawMessage) (NewReport, string, error) {
	var a createArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return NewReport{}, "", fmt.Errorf("%w: %v", skills.ErrInvalidArguments, err)
	}
	target, where := TargetRef{Channel: t.in.Channel, Account: t.in.Account, ChatType: t.in.ChatType, ChatID: t.in.ChatID}, t.s.gw.Config.Messages.Reports.ThisChat
	switch a.Target {
	case "me":
		target.ChatType, target.ChatID, where = channels.ChatSingle, t.in.Sender.UserID, t.s.gw.Config.Messages.Reports.Me
	case "this_chat":
	default:
		return NewReport{}, "", fmt.Errorf("%w: target must be this_chat or me", skills.ErrInvalidArguments)
	}
	return NewReport{Name: a.Name, Cron: a.Cron, TZ: a.TimeZone, CatchUp: a.CatchUp, Owner: ownerOf(t.in),
		Spec: Spec{Skill: a.Skill, Args: a.Args, Prompt: a.Prompt}, Targets: []TargetRef{target}}, where, nil
}

// create checks the report and asks for 「确认」 with the schedule in
// words and its next three fire times; nothing is saved yet.
func (t *reportTool) create(ctx context.Context, raw json.RawMessage) (skills.Result, error) {
	nr, where, err := t.newReport(raw)
	if err != nil {
		return skills.Result{}, err
	}
	when, next, err := t.s.PreviewReport(ctx, nr)
	if err != nil {
		return skills.Result{}, fmt.Errorf("%w: %w", skills.ErrInvalidArguments, err)
	}
	times := make([]string, len(next))
	for i, n := range next {
		times[i] = n.Format("2006-01-02 15:04") + " " + t.s.gw.Config.Messages.Reports.Schedule.Weekday(n)
	}
	prompt := fmt.Sprintf(t.s.gw.Config.Messages.Reports.ConfirmCreate, strings.TrimSpace(nr.Name), when, where, strings.Join(times, t.s.gw.Config.Messages.Agent.ListSep))
	return skills.Result{Skill: toolReportCreate, Confirm: &skills.Confirmation{Prompt: prompt, Skill: toolReportCreate, Args: raw}}, nil
}

func (t *reportTool) list(ctx context.Context, _ json.RawMessage) (skills.Result, error) {
	owner := ownerOf(t.in)
	rs, err := t.s.ListReports(ctx, &owner)
	if err != nil {
		return skills.Result{}, err
	}
	type item struct {
		ID     int64  `json:"id"`
		Name   string `json:"name"`
		When   string `json:"when"`
		Next   string `json:"next,omitempty"`
		Paused bool   `json:"paused"`
	}
	items := []item{}
	for _, r := range rs {
		it := item{ID: r.ID, Name: r.Name, When: r.When, Paused: r.Paused}
		if !r.Next.IsZero() {
			it.Next = r.Next.Format("2006-01-02 15:04")
		}
		items = append(items, it)
	}
	return jsonResult(toolReportList, map[string]any{"reports": items})
}

// idArg reads {"id": N}.
func idArg(raw json.RawMessage) (int64, error) {
	var a struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(raw, &a); err != nil || a.ID <= 0 {
		return 0, fmt.Errorf("%w: id: a report id from report_list", skills.ErrInvalidArguments)
	}
	return a.ID, nil
}

// ownReport reads the sender's report named by raw's id; another user's
// report is "not found", as if it did not exist.
func (t *reportTool) ownReport(ctx context.Context, raw json.RawMessage) (store.Report, error) {
	id, err := idArg(raw)
	if err != nil {
		return store.Report{}, err
	}
	owner := ownerOf(t.in)
	r, err := store.GetReport(ctx, t.s.gw.Pool, id, &owner)
	if errors.Is(err, store.ErrNotFound) {
		return r, fmt.Errorf("%w: you have no report %d", skills.ErrInvalidArguments, id)
	}
	return r, err
}

func (t *reportTool) pause(ctx context.Context, raw json.RawMessage) (skills.Result, error) {
	return t.setPaused(ctx, raw, true)
}

func (t *reportTool) resume(ctx context.Context, raw json.RawMessage) (skills.Result, error) {
	return t.setPaused(ctx, raw, false)
}

func (t *reportTool) setPaused(ctx context.Context, raw json.RawMessage, paused bool) (skills.Result, error) {
	r, err := t.ownReport(ctx, raw)
	if err != nil {
		return skills.Result{}, err
	}
	owner := ownerOf(t.in)
	if err := t.s.PauseReport(ctx, r.ID, &owner, paused); err != nil {
		return skills.Result{}, err
	}
	return jsonResult(t.spec.Name, map[string]any{"id": r.ID, "name": r.Name, "paused": paused})
}

func (t *reportTool) remove(ctx context.Context, raw json.RawMessage) (skills.Result, error) {
	r, err := t.ownReport(ctx, raw)
	if err != nil {
		return skills.Result{}, err
	}
	prompt := fmt.Sprintf(t.s.gw.Config.Messages.Reports.ConfirmDelete, r.Name)
	return skills.Result{Skill: toolReportDelete, Confirm: &skills.Confirmation{Prompt: prompt, Skill: toolReportDelete, Args: raw}}, nil
}

func (t *reportTool) runNow(ctx context.Context, raw json.RawMessage) (skills.Result, error) {
	r, err := t.ownReport(ctx, raw)
	if err != nil {
		return skills.Result{}, err
	}
	owner := ownerOf(t.in)
	runID, err := t.s.RunReportNow(ctx, r.ID, &owner)
	if err != nil {
		return skills.Result{}, err
	}
	return jsonResult(toolReportRunNow, map[string]any{"id": r.ID, "name": r.Name, "run_id": runID, "status": "queued"})
}

func jsonResult(skill string, v any) (skills.Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return skills.Result{}, err
	}
	return skills.Result{Skill: skill, Status: 200, ContentType: "application/json", Body: b}, nil
}

// CallConfirmed implements gateway.ChatToolFeature: creating or deleting
// a report, once its sender confirmed; any other tool is not handled here.
func (s *Service) CallConfirmed(ctx context.Context, in channels.Inbound, _ skills.Caller, tool string, args json.RawMessage) (skills.Result, bool, error) {
	t := &reportTool{s: s, in: in}
	var res skills.Result
	var err error
	switch tool {
	case toolReportCreate:
		res, err = t.confirmedCreate(ctx, args)
	case toolReportDelete:
		res, err = t.confirmedDelete(ctx, args)
	default:
		return skills.Result{}, false, nil
	}
	return res, true, err
}

// confirmedCreate creates the report, checked again: the owner is the
// sender who confirmed (the same session's user).
func (t *reportTool) confirmedCreate(ctx context.Context, raw json.RawMessage) (skills.Result, error) {
	nr, _, err := t.newReport(raw)
	if err != nil {
		return skills.Result{}, err
	}
	r, err := t.s.CreateReport(ctx, nr)
	if err != nil {
		return skills.Result{}, err
	}
	return jsonResult(toolReportCreate, map[string]any{"id": r.ID, "summary": fmt.Sprintf(t.s.gw.Config.Messages.Reports.Created, r.Name, r.ID)})
}

func (t *reportTool) confirmedDelete(ctx context.Context, raw json.RawMessage) (skills.Result, error) {
	r, err := t.ownReport(ctx, raw)
	if err != nil {
		return skills.Result{}, err
	}
	owner := ownerOf(t.in)
	if err := store.DeleteReport(ctx, t.s.gw.Pool, r.ID, &owner); err != nil {
		return skills.Result{}, err
	}
	return jsonResult(toolReportDelete, map[string]any{"id": r.ID, "summary": fmt.Sprintf(t.s.gw.Config.Messages.Reports.Deleted, r.Name)})
}
