package console

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// statsWindow is the period the overview and the skills page count over.
const statsWindow = time.Hour

// threadLimit is the most messages a conversation page shows.
const threadLimit = 200

// overviewData is the overview page.
type overviewData struct {
	Trend    trendData
	Window   time.Duration
	Accounts []accountRow
	Tokens   []expiryRow
	Leases   []expiryRow
	Queues   []queueRow
	// ExportFrom and ExportTo fill the export's date fields: the last 7
	// days, today included (the operator's local days).
	ExportFrom, ExportTo string
}

type accountRow struct {
	store.AccountStat
	PerMinute string
	Refusal   *refusalView // the newest refused callback, if any
}

type expiryRow struct {
	store.Expiry
	Live bool
	In   time.Duration // until expiry (negative: since)
}

type queueRow struct {
	store.QueueDepth
	Age time.Duration
}

func (c *Console) overview(w http.ResponseWriter, r *request) {
	ctx, now := r.Context(), c.deps.Now()
	stats, err := c.deps.Store.AccountStats(ctx, now.Add(-statsWindow))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	refusals, err := c.deps.Store.LastRefusals(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := overviewData{Window: statsWindow, Accounts: accountRows(r.t, stats, refusals),
		ExportFrom: now.Local().AddDate(0, 0, -6).Format(time.DateOnly), ExportTo: now.Local().Format(time.DateOnly)}
	tw := trendWindowOf(r, now)
	if d.Trend, err = c.trend(r, tw, Prefix+"/"); err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Trend.Charts, err = c.overviewCharts(r, tw); err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Trend.Headline, err = c.headline(r, tw, now); err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Trend.Costs, err = c.costs(r, tw, now); err != nil {
		c.fail(w, r, err)
		return
	}
	tokens, err := c.deps.Store.TokenExpiries(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	leases, err := c.deps.Store.Leases(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d.Tokens, d.Leases = expiryRows(tokens, now), expiryRows(leases, now)
	queues, err := c.deps.Store.QueueDepths(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, q := range queues {
		d.Queues = append(d.Queues, queueRow{q, now.Sub(q.Oldest).Round(time.Second)})
	}
	c.render(w, r, "overview", "", http.StatusOK, d)
}

// accountRows are the overview's rows: every account with traffic, and
// every account whose callbacks were only refused (a wrong key lets no
// message in), with its newest refusal explained.
func accountRows(t map[string]string, stats []store.AccountStat, refusals []store.AccountRefusal) []accountRow {
	out := make([]accountRow, 0, len(stats))
	index := map[[2]string]int{}
	for _, s := range stats {
		index[[2]string{s.Channel, s.Account}] = len(out)
		out = append(out, accountRow{AccountStat: s, PerMinute: strconv.FormatFloat(float64(s.Messages)/statsWindow.Minutes(), 'f', 2, 64)})
	}
	for _, rf := range refusals {
		i, ok := index[[2]string{rf.Channel, rf.Account}]
		if !ok {
			i = len(out)
			out = append(out, accountRow{AccountStat: store.AccountStat{Channel: rf.Channel, Account: rf.Account}, PerMinute: "0.00"})
		}
		out[i].Refusal = explainRefusal(t, rf.Refusal)
	}
	return out
}

func expiryRows(list []store.Expiry, now time.Time) []expiryRow {
	out := make([]expiryRow, 0, len(list))
	for _, e := range list {
		out = append(out, expiryRow{e, e.ExpiresAt.After(now), e.ExpiresAt.Sub(now).Round(time.Second)})
	}
	return out
}

// periods are the time filters offered on lists, newest first.
var periods = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

// since is the start of the period the request asks for (zero: any time).
func since(r *request, now time.Time) time.Time {
	if d, ok := periods[r.URL.Query().Get("period")]; ok {
		return now.Add(-d)
	}
	return time.Time{}
}

type conversationsData struct {
	Channel, UserID, ChatID, Period string
	Periods                         []string
	List                            []store.Conversation
}

var periodNames = []string{"1h", "24h", "7d", "30d"}

func (c *Console) conversations(w http.ResponseWriter, r *request) {
	q := r.URL.Query()
	d := conversationsData{Channel: q.Get("channel"), UserID: q.Get("user"), ChatID: q.Get("chat"), Period: q.Get("period"), Periods: periodNames}
	list, err := c.deps.Store.FindConversations(r.Context(), store.ConversationFilter{
		Channel: d.Channel, UserID: d.UserID, ChatID: d.ChatID, Since: since(r, c.deps.Now())})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d.List = list
	c.render(w, r, "conversations", "", http.StatusOK, d)
}

type threadData struct {
	Conversation store.Conversation
	Entries      []store.ThreadEntry
}

func (c *Console) thread(w http.ResponseWriter, r *request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	conv, err := c.deps.Store.GetConversation(r.Context(), id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	entries, err := c.deps.Store.Thread(r.Context(), id, threadLimit)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, "thread", "", http.StatusOK, threadData{conv, entries})
}

// stopReasons are the agent's stop reasons, offered as a filter.
var stopReasons = []string{agent.StopFinished, agent.StopMaxSteps, agent.StopTimeout, agent.StopRepeated, agent.StopIdle,
	agent.StopFatalTool, agent.StopNeedsInput, agent.StopAwaitingConfirmation, agent.StopPlanRefused, agent.StopError, agent.StopCanceled}

type runsData struct {
	UserID, ChatID, Stop, Period, Channel, Account string
	Stops, Periods                                 []string
	// From and To are a chart's bucket the list was opened from (the
	// drill-down), zero when the period select applies.
	From, To time.Time
	List     []store.RunSummary
}

func (c *Console) runs(w http.ResponseWriter, r *request) {
	q := r.URL.Query()
	d := runsData{UserID: q.Get("user"), ChatID: q.Get("chat"), Stop: q.Get("stop"), Period: q.Get("period"),
		Channel: q.Get("channel"), Account: q.Get("account"), Stops: stopReasons, Periods: periodNames}
	f := store.RunFilter{UserID: d.UserID, ChatID: d.ChatID, StopReason: d.Stop, Channel: d.Channel, Account: d.Account,
		Since: since(r, c.deps.Now()), Limit: 100}
	// A drill-down's bucket; a time that does not parse is ignored like an
	// unknown period (the list is wider, never someone else's).
	if from, err := time.Parse(time.RFC3339, q.Get("from")); err == nil {
		d.From, f.Since = from, from
	}
	if to, err := time.Parse(time.RFC3339, q.Get("to")); err == nil {
		d.To, f.Until = to, to
	}
	list, err := c.deps.Store.ListRuns(r.Context(), f)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d.List = list
	c.render(w, r, "runs", "", http.StatusOK, d)
}

// runData is a run's timeline.
type runData struct {
	Run    store.RunRecord
	Rating int // the employee's: 1 👍, -1 👎, 0 none
	Origin store.RunOrigin
	Took   time.Duration
	Steps  []stepView
}

// stepView is one step as the timeline shows it: the stored columns plus
// what the agent recorded besides (stage, retries, state changes such as
// compression and archived observations).
type stepView struct {
	store.StepRecord
	Failed bool
	Detail agent.Step
	// Knowledge are the passages the knowledge base gave this run's
	// asker and which the answer cited (a knowledge step only).
	Knowledge knowledge.Trace
}

func (c *Console) run(w http.ResponseWriter, r *request) {
	id := r.PathValue("id")
	run, err := c.deps.Store.GetRun(r.Context(), id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	origin, err := c.deps.Store.GetRunOrigin(r.Context(), id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	steps, err := c.deps.Store.GetRunSteps(r.Context(), id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := runData{Run: run, Origin: origin, Took: run.FinishedAt.Sub(run.StartedAt).Round(time.Millisecond)}
	if d.Rating, err = c.deps.Store.RunRating(r.Context(), id); err != nil {
		c.fail(w, r, err)
		return
	}
	for _, s := range steps {
		v := stepView{StepRecord: s, Failed: s.Error != ""}
		_ = json.Unmarshal(s.Detail, &v.Detail) // older rows have no detail; the columns suffice
		v.Knowledge, _ = knowledge.ParseTrace(s.Kind, s.Observation)
		d.Steps = append(d.Steps, v)
	}
	c.render(w, r, "run", "", http.StatusOK, d)
}

// breakerState is a breaker's state in the page's language ("" when the
// skill has no breaker).
func breakerState(t map[string]string, state string) string {
	if state == "" {
		return ""
	}
	return cmp.Or(t["breaker_"+state], state)
}

// skillRow is one skill on the skills page.
type skillRow struct {
	Name, DisplayName, Description, Executor, Breaker string
	Access                                            []string // "corps: a, b"; empty: everyone
	Calls                                             int
	PerMinute, ErrorRate                              string
	P95                                               time.Duration
}

type skillsData struct {
	Trend   trendData
	Window  time.Duration
	Skills  []skillRow
	Errors  []store.SkillError
	Outcome *reloadOutcome
}

func (c *Console) skillsPage(w http.ResponseWriter, r *request) {
	d, err := c.skillsData(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, "skills", "", http.StatusOK, d)
}

func (c *Console) skillsData(r *request) (skillsData, error) {
	stats, err := c.deps.Store.SkillStats(r.Context(), c.deps.Now().Add(-statsWindow))
	if err != nil {
		return skillsData{}, err
	}
	errs, err := c.deps.Store.LastSkillErrors(r.Context(), 10)
	if err != nil {
		return skillsData{}, err
	}
	d := skillsData{Window: statsWindow, Errors: errs}
	tw := trendWindowOf(r, c.deps.Now())
	if d.Trend, err = c.trend(r, tw, Prefix+"/skills"); err != nil {
		return skillsData{}, err
	}
	if d.Trend.Charts, err = c.skillCharts(r, tw); err != nil {
		return skillsData{}, err
	}
	reg := c.deps.Skills()
	for _, s := range reg.Skills() {
		row := skillRow{Name: s.Name, DisplayName: s.DisplayName, Description: s.Description, Executor: s.Executor,
			Breaker: breakerState(r.t, reg.BreakerState(s.Name)), PerMinute: "0.00", ErrorRate: "–"}
		a := s.Access
		for _, rule := range []struct {
			name string
			list []string
		}{{"corps", a.Corps}, {"channels", a.Channels}, {"accounts", a.Accounts}, {"users", a.Users}, {"departments", a.Departments}, {"chats", a.Chats}} {
			if len(rule.list) > 0 {
				row.Access = append(row.Access, rule.name+": "+strings.Join(rule.list, ", "))
			}
		}
		if i := slices.IndexFunc(stats, func(st store.SkillStat) bool { return st.Tool == s.Name }); i >= 0 {
			st := stats[i]
			row.Calls, row.P95 = st.Calls, st.P95
			row.PerMinute = strconv.FormatFloat(float64(st.Calls)/statsWindow.Minutes(), 'f', 2, 64)
			row.ErrorRate = strconv.FormatFloat(100*float64(st.Errors)/float64(st.Calls), 'f', 1, 64) + "%"
		}
		d.Skills = append(d.Skills, row)
	}
	return d, nil
}

// reloadOutcome is what "check and reload" did.
type reloadOutcome struct {
	Findings []string
	Reloaded bool
	Error    string
}

// reloadSkills runs the skills check and, when it finds no error, makes
// the definitions on disk current.
func (c *Console) reloadSkills(w http.ResponseWriter, r *request) {
	out := &reloadOutcome{}
	findings := c.deps.CheckSkills()
	for _, f := range findings {
		out.Findings = append(out.Findings, f.String())
	}
	if !skills.HasErrors(findings) {
		if err := c.deps.ReloadSkills(); err != nil {
			out.Error = err.Error()
		} else {
			out.Reloaded = true
		}
	}
	c.deps.Logger.Info("console: skills check and reload", "user", r.session.Username, "reloaded", out.Reloaded, "findings", len(findings))
	d, err := c.skillsData(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d.Outcome = out
	c.render(w, r, "skills", fragmentFor(r, "reload-result"), http.StatusOK, d)
}

// fragmentFor is the block to render alone for an htmx request, or ""
// for the whole page.
func fragmentFor(r *request, block string) string {
	if r.Header.Get("HX-Request") != "" {
		return block
	}
	return ""
}
