package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
)

func TestPrivacyRetention(t *testing.T) {
	t.Parallel()
	if cfg := parse(t, memoryBase); cfg.Privacy.Retention != 90*24*time.Hour || cfg.Privacy.RetentionBatch != 500 {
		t.Errorf("defaults: %+v, want 90 days in batches of 500", cfg.Privacy)
	}
	if cfg := parse(t, memoryBase+"privacy:\n  retention: 720h\n"); cfg.Privacy.Retention != 30*24*time.Hour {
		t.Errorf("retention 720h read as %s", cfg.Privacy.Retention)
	}
	_, err := config.ParseConfig([]byte(memoryBase+"privacy:\n  retention: 1h\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "privacy.retention: must be at least 24h") {
		t.Errorf("1h: err = %v, want it named", err)
	}
}
