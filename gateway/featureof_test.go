package gateway_test

import (
	"testing"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/reports"
)

// plainFeature is a feature with nothing but Attach.
type plainFeature struct{}

func (plainFeature) Attach(gateway.Services) error { return nil }

func TestFeatureOf(t *testing.T) {
	t.Parallel()
	rs := reports.New()
	fs := []gateway.Feature{plainFeature{}, rs}
	t.Run("OK", func(t *testing.T) {
		if got, ok := gateway.FeatureOf[*reports.Service](fs); !ok || got != rs {
			t.Errorf("FeatureOf[*reports.Service] = %p, %v; want %p", got, ok, rs)
		}
	})
	t.Run("ByInterface", func(t *testing.T) {
		if got, ok := gateway.FeatureOf[gateway.RunningFeature](fs); !ok || got != gateway.RunningFeature(rs) {
			t.Errorf("FeatureOf[RunningFeature] = %v, %v; want the reports service", got, ok)
		}
	})
	t.Run("None", func(t *testing.T) {
		if got, ok := gateway.FeatureOf[*reports.Service](fs[:1]); ok || got != nil {
			t.Errorf("FeatureOf without one = %v, %v; want nil, false", got, ok)
		}
	})
}
