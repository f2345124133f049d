package gateway_test

import (
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/admin"
	"github.com/hermes-gw/hermes/gateway/reports"
)

// newFeatures are the features a test gateway runs, as cmd/hermes wires
// them (cmd/hermes/platforms.go, and serve's operators' pages), made anew
// for each gateway.
func newFeatures() []gateway.Feature {
	rep := reports.New()
	return []gateway.Feature{
		rep,
		admin.New(admin.ServiceReports{Service: rep}),
	}
}
