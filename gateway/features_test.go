package gateway_test

import (
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/reports"
)

// newFeatures are the features a test gateway runs, as cmd/hermes wires
// them (cmd/hermes/platforms.go), made anew for each gateway.
func newFeatures() []gateway.Feature {
	return []gateway.Feature{
		reports.New(),
	}
}
