package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/hermes-gw/hermes/gateway/reports/schedule"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Schedules page limits.
const (
	// nextFires is how many coming fire times the list shows per report.
	nextFires = 3
	// historyLimit is the most runs a report's history page shows.
	historyLimit = 50
)

// fireLayout is how fire times are shown, in the report's own zone.
const fireLayout = "2006-01-02 15:04 (Mon)"

// scheduleRow is one report on the schedules page.
type scheduleRow struct {
	store.Report
	When    string   // the schedule in words
	Next    []string // the coming fire times, in the report's zone; none while paused
	LastRun *store.ReportRun
}

type schedulesData struct {
	List []scheduleRow
}

// schedules lists every report with its schedule and its last run.
func (c *Console) schedules(w http.ResponseWriter, r *request) {
	ctx, now := r.Context(), c.deps.Now()
	list, err := c.deps.Store.ListReports(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	var d schedulesData
	for _, rep := range list {
		row := scheduleRow{Report: rep}
		if sch, err := schedule.Parse(rep.Cron, rep.TZ); err == nil {
			row.When = c.deps.When.Describe(sch, now)
			if !rep.Paused {
				for _, t := range sch.NextN(now, nextFires) {
					row.Next = append(row.Next, t.Format(fireLayout))
				}
			}
		}
		last, err := c.deps.Store.ReportHistory(ctx, rep.ID, 1)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if len(last) > 0 {
			row.LastRun = &last[0]
		}
		d.List = append(d.List, row)
	}
	c.render(w, r, "schedules", "", http.StatusOK, d)
}

type scheduleData struct {
	Report store.Report
	When   string
	Runs   []store.ReportRun
}

// schedule is one report's run history with each target's delivery.
func (c *Console) schedule(w http.ResponseWriter, r *request) {
	id, ok := reportID(r)
	if !ok {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	rep, err := c.deps.Store.GetReport(r.Context(), id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	runs, err := c.deps.Store.ReportHistory(r.Context(), id, historyLimit)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := scheduleData{Report: rep, Runs: runs}
	if sch, err := schedule.Parse(rep.Cron, rep.TZ); err == nil {
		d.When = c.deps.When.Describe(sch, c.deps.Now())
	}
	c.render(w, r, "schedule", "", http.StatusOK, d)
}

// runReportNow queues a run of the report outside its schedule, then
// shows its history.
func (c *Console) runReportNow(w http.ResponseWriter, r *request) {
	id, ok := reportID(r)
	if !ok {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	runID, err := c.deps.RunReportNow(r.Context(), id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.deps.Logger.Info("console: report run now", "user", r.session.Username, "report", id, "run", runID)
	http.Redirect(w, r.Request, Prefix+"/schedules/"+strconv.FormatInt(id, 10), http.StatusSeeOther)
}

// pauseReport and resumeReport stop and restart the report's schedule.
func (c *Console) pauseReport(w http.ResponseWriter, r *request)  { c.setPaused(w, r, true) }
func (c *Console) resumeReport(w http.ResponseWriter, r *request) { c.setPaused(w, r, false) }

func (c *Console) setPaused(w http.ResponseWriter, r *request, paused bool) {
	id, ok := reportID(r)
	if !ok {
		c.fail(w, r, store.ErrNotFound)
		return
	}
	if err := c.deps.PauseReport(r.Context(), id, paused); err != nil {
		c.fail(w, r, err)
		return
	}
	c.deps.Logger.Info("console: report paused", "user", r.session.Username, "report", id, "paused", paused)
	http.Redirect(w, r.Request, Prefix+"/schedules", http.StatusSeeOther)
}

// reportID is the {id} of the request's path.
func reportID(r *request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return id, err == nil && id > 0
}

// duration is how long a run took, or "" while it has not finished.
func duration(start, end *time.Time) string {
	if start == nil || end == nil {
		return ""
	}
	return end.Sub(*start).Round(time.Millisecond).String()
}
