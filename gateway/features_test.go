package gateway_test

import (
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/admin"
)

// newFeatures are the features a test gateway runs, as cmd/hermes wires
// them (cmd/hermes/platforms.go, and serve's operators' pages), made anew
// for each gateway. The gateway's tests never act on a report from the
// console, so its pages get no report actions.
func newFeatures() []gateway.Feature {
	return []gateway.Feature{
		admin.New(nil),
	}
}
