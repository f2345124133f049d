package reports_test

import (
	"testing"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/reports"
)

// One service wired into two gateways would run one's reports with the
// other's pool and channels: the second Attach is refused.
func TestAttachOnce(t *testing.T) {
	s := reports.New()
	if err := s.Attach(gateway.Services{}); err != nil {
		t.Fatalf("first attach: %v", err)
	}
	if err := s.Attach(gateway.Services{}); err == nil {
		t.Fatal("second attach: no error")
	}
}
