package admin

import (
	"context"
	"errors"

	"github.com/hermes-gw/hermes/gateway/reports"
)

// Reports are the console's report actions, as the operator on any
// owner's report: a run now outside the schedule (its run's id), and a
// pause (true) or resume (false) of its schedule. Errors:
// store.ErrNotFound.
type Reports interface {
	RunReportNow(ctx context.Context, id int64) (runID int64, err error)
	PauseReport(ctx context.Context, id int64, paused bool) error
}

// ServiceReports are the console's report actions done by the reports
// feature, as the operator (any owner's report).
type ServiceReports struct{ Service *reports.Service }

// RunReportNow implements Reports.
func (r ServiceReports) RunReportNow(ctx context.Context, id int64) (int64, error) {
	return r.Service.RunReportNow(ctx, id, nil)
}

// PauseReport implements Reports.
func (r ServiceReports) PauseReport(ctx context.Context, id int64, paused bool) error {
	return r.Service.PauseReport(ctx, id, nil, paused)
}

// errNoReports answers the console's report actions of a feature built
// without Reports.
var errNoReports = errors.New("admin: no report actions")

type noReports struct{}

func (noReports) RunReportNow(context.Context, int64) (int64, error) { return 0, errNoReports }
func (noReports) PauseReport(context.Context, int64, bool) error     { return errNoReports }
