package gatewaytest

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

// Shanghai is the test reports' time zone.
var Shanghai, _ = time.LoadLocation("Asia/Shanghai")

// Monday9 is a Monday 09:00 in Shanghai, the weekly report's tick.
var Monday9 = time.Date(2026, 12, 7, 9, 0, 0, 0, Shanghai)

// AppOwner owns reports made on the test WeCom app (zhangsan, a demo
// employee the backend knows).
var AppOwner = store.ReportOwner{Channel: "wecom", Account: App, Corp: CorpID, User: "zhangsan", Name: "张三"}

// NewClocked is New on a fake clock an hour before Monday9: the demo
// backend checks signatures by the clock the gateway signs them with
// (give it Deps.Now: clock.Now).
func NewClocked(t testing.TB) (*Harness, *chantest.Clock) {
	h := New(t)
	clock := chantest.NewClock(Monday9.Add(-time.Hour))
	h.Backend = demobackend.New([]byte(HMACKey), clock.Now)
	srv := httptest.NewServer(h.Backend)
	t.Cleanup(srv.Close)
	h.BackendURL = srv.URL
	return h, clock
}

// StartWithReports is StartExtra with NewFeatures, returning the reports
// service among them too.
func (h *Harness) StartWithReports(extra string, deps gateway.Deps) (*gateway.Gateway, *reports.Service) {
	h.T.Helper()
	deps.Features = NewFeatures()
	rs := FeatureOf[*reports.Service](h.T, deps.Features)
	return h.StartExtra(extra, deps), rs
}

// WeeklyTickets is the sample weekly IT-ticket report of owner, with a
// bar chart, to targets.
func WeeklyTickets(owner store.ReportOwner, catchUp string, targets ...reports.TargetRef) reports.NewReport {
	return reports.NewReport{
		Name: "上周工单统计", Cron: "0 9 * * 1", TZ: "Asia/Shanghai", CatchUp: catchUp, Owner: owner,
		Spec: reports.Spec{Skill: "it_ticket_weekly",
			Template: "**{{.Report}}**（{{.Data.week}}）\n\n{{.Data.summary}}",
			Chart: &reports.ChartSpec{Type: reports.ChartBar, Title: "上周工单", Rows: "categories", Label: "category",
				Values: []string{"opened", "resolved"}, Names: []string{"新建", "已解决"}}},
		Targets: targets,
	}
}
