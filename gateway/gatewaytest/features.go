package gatewaytest

import (
	"testing"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/admin"
	"github.com/hermes-gw/hermes/gateway/alerts"
	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/openaiapi"
	"github.com/hermes-gw/hermes/gateway/privacy"
	"github.com/hermes-gw/hermes/gateway/ratings"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/router"
	"github.com/hermes-gw/hermes/gateway/skillfiles"
)

// NewFeatures are the features a test gateway runs, as cmd/hermes wires
// them (cmd/hermes/platforms.go, and serve's operators' pages), made anew
// for each gateway.
func NewFeatures() []gateway.Feature {
	rep := reports.New()
	return []gateway.Feature{
		rep,
		admin.New(admin.ServiceReports{Service: rep}),
		openaiapi.New(),
		router.New(),
		skillfiles.New(),
		memory.New(),
		ratings.New(),
		privacy.New(),
		alerts.New(),
	}
}

// FeatureOf is the feature of type F among features (one NewFeatures
// made), for a test that drives it directly.
func FeatureOf[F gateway.Feature](t testing.TB, features []gateway.Feature) F {
	t.Helper()
	if f, ok := gateway.FeatureOf[F](features); ok {
		return f
	}
	var zero F
	t.Fatalf("no %T among the features", zero)
	return zero
}
