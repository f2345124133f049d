package admin

import (
	"context"
	"errors"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Reports are the console's report actions, as the operator on any
// owner's report: a run now outside the schedule (its run's id), and a
// pause (true) or resume (false) of its schedule. Errors:
// store.ErrNotFound.
type Reports interface {
	RunReportNow(ctx context.Context, id int64) (runID int64, err error)
	PauseReport(ctx context.Context, id int64, paused bool) error
}

// GatewayReports are the report actions as a gateway does them today:
// its RunReportNow, and the store's pause as `hermes reports pause` does.
// Set Gateway once it is built (the feature is built before it). Interim
// (issue 17): once reports are a service of their own, cmd/hermes hands
// that service to New instead and this goes.
type GatewayReports struct{ Gateway *gateway.Gateway }

// RunReportNow implements Reports.
func (r *GatewayReports) RunReportNow(ctx context.Context, id int64) (int64, error) {
	return r.Gateway.RunReportNow(ctx, id, nil)
}

// PauseReport implements Reports.
func (r *GatewayReports) PauseReport(ctx context.Context, id int64, paused bool) error {
	s := r.Gateway.Services()
	return store.SetReportPaused(ctx, s.Pool, id, nil, paused, s.Now())
}

// errNoReports answers the console's report actions of a feature built
// without Reports.
var errNoReports = errors.New("admin: no report actions")

type noReports struct{}

func (noReports) RunReportNow(context.Context, int64) (int64, error) { return 0, errNoReports }
func (noReports) PauseReport(context.Context, int64, bool) error     { return errNoReports }
