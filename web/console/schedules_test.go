package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/reports/schedule"
	"github.com/hermes-gw/hermes/gateway/store"
)

// weeklyReport is the sample weekly IT-ticket report, owned by zhangsan
// and sent to his chat on the test channel.
func weeklyReport(t *testing.T, f *fixture) store.Report {
	t.Helper()
	rep, err := f.reports.CreateReport(context.Background(), reports.NewReport{
		Name: "上周工单统计", Cron: "0 9 * * 1", TZ: "Asia/Shanghai",
		Owner:   store.ReportOwner{Channel: "test", Account: "acc-1", Corp: "corp-test", User: "zhangsan", Name: "张三", Chat: "zhangsan"},
		Spec:    reports.Spec{Skill: "it_ticket_weekly"},
		Targets: []reports.TargetRef{{Channel: "test", Account: "acc-1", ChatType: channels.ChatGroup, ChatID: "it-group"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestSchedulesListAndRunNow(t *testing.T) {
	f := newFixture(t)
	rep := weeklyReport(t, f)
	base := f.srv.URL + "/console/schedules"
	id := itoa(rep.ID)
	c := client(t)
	_, csrf := f.login(t, c, adminUser, adminPass)

	sch, err := schedule.Parse(rep.Cron, rep.TZ)
	if err != nil {
		t.Fatal(err)
	}
	status, body := get(t, c, base)
	for _, want := range []string{"上周工单统计", "zhangsan", "0 9 * * 1", "Asia/Shanghai", "每周一 09:00", "it-group",
		sch.Next(time.Now()).Format("2006-01-02 15:04"), "/console/schedules/" + id + "/pause"} {
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("schedules: %d, want 200 showing %q:\n%s", status, want, body)
		}
	}
	noSecrets(t, "schedules", body)

	// Run now: the run is recorded at once and, once the worker has sent
	// it, its delivery to the group shows as delivered.
	if status, _ := postForm(t, c, base+"/"+id+"/run", url.Values{"csrf": {csrf}}); status != http.StatusSeeOther {
		t.Fatalf("run now: %d, want 303 to the history", status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitForRun(ctx, t, f, rep.ID)
	status, body = get(t, c, base+"/"+id)
	for _, want := range []string{"上周工单统计", store.TriggerManual, store.RunDone, "it-group", store.DeliveryDelivered} {
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("history: %d, want 200 showing %q:\n%s", status, want, body)
		}
	}
	noSecrets(t, "history", body)
	if _, body := get(t, c, base); !strings.Contains(body, store.RunDone) {
		t.Errorf("schedules does not show the last run's status:\n%s", body)
	}
	if status, _ := get(t, c, base+"/999999"); status != http.StatusNotFound {
		t.Errorf("history of no report: %d, want 404", status)
	}
	if status, _ := postForm(t, c, base+"/999999/run", url.Values{"csrf": {csrf}}); status != http.StatusNotFound {
		t.Errorf("run now of no report: %d, want 404", status)
	}
}

// waitForRun waits until report id's latest run is done and every target
// delivered.
func waitForRun(ctx context.Context, t *testing.T, f *fixture, id int64) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		runs, err := store.ReportHistory(ctx, f.pool, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 1 && runs[0].Status == store.RunDone && len(runs[0].Deliveries) == 1 &&
			runs[0].Deliveries[0].Status == store.DeliveryDelivered {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the run never finished: %+v", runs)
		case <-tick.C:
		}
	}
}

func TestSchedulesPauseResumeAndRefusals(t *testing.T) {
	f := newFixture(t)
	rep := weeklyReport(t, f)
	base := f.srv.URL + "/console/schedules/" + itoa(rep.ID)
	ctx := context.Background()
	paused := func() bool {
		t.Helper()
		r, err := store.GetReport(ctx, f.pool, rep.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.Paused
	}
	noRuns := func(who string) {
		t.Helper()
		if runs, err := store.ReportHistory(ctx, f.pool, rep.ID, 10); err != nil || len(runs) != 0 {
			t.Errorf("%s: runs %+v, %v; want none", who, runs, err)
		}
	}

	viewer := client(t)
	_, viewerCSRF := f.login(t, viewer, viewerUser, viewerPass)
	for _, action := range []string{"/pause", "/run"} {
		if status, _ := postForm(t, viewer, base+action, url.Values{"csrf": {viewerCSRF}}); status != http.StatusForbidden {
			t.Errorf("viewer %s: %d, want 403", action, status)
		}
	}
	if paused() {
		t.Errorf("a viewer paused the report")
	}
	noRuns("viewer")
	if _, body := get(t, viewer, f.srv.URL+"/console/schedules"); strings.Contains(body, "/pause") || !strings.Contains(body, "上周工单统计") {
		t.Errorf("viewer's schedules page: want the report without actions:\n%s", body)
	}

	admin := client(t)
	_, csrf := f.login(t, admin, adminUser, adminPass)
	for _, form := range []url.Values{nil, {"csrf": {"forged"}}} {
		for _, action := range []string{"/pause", "/run"} {
			if status, _ := postForm(t, admin, base+action, form); status != http.StatusForbidden {
				t.Errorf("admin %s with csrf %q: %d, want 403", action, form.Get("csrf"), status)
			}
		}
	}
	if paused() {
		t.Errorf("a POST without CSRF paused the report")
	}
	noRuns("no CSRF")

	if status, _ := postForm(t, admin, base+"/pause", url.Values{"csrf": {csrf}}); status != http.StatusSeeOther || !paused() {
		t.Fatalf("admin pause: %d, paused %v", status, paused())
	}
	_, body := get(t, admin, f.srv.URL+"/console/schedules")
	if !strings.Contains(body, "已暂停") || !strings.Contains(body, "/resume") {
		t.Errorf("schedules after pause: want paused with a resume button:\n%s", body)
	}
	if status, _ := postForm(t, admin, base+"/resume", url.Values{"csrf": {csrf}}); status != http.StatusSeeOther || paused() {
		t.Errorf("admin resume: %d, paused %v", status, paused())
	}
}
