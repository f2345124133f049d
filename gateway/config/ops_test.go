package config_test

import (
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/config"
)

// TestOpsConfigErrorsNameTheKey: bad operations keys are refused, each
// error naming its key; the defaults fill the rest.
func TestOpsConfigErrorsNameTheKey(t *testing.T) {
	base := "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"
	cfg, err := config.ParseConfig([]byte(base), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Metrics.MetricsOn() || cfg.Tracing.OTLPEndpoint != "" || cfg.Log.Format != "text" || cfg.Log.Level != "info" ||
		len(cfg.OpenAIAPI.Models) != 1 || cfg.OpenAIAPI.Models[0] != "hermes" || cfg.OpenAIAPI.MaxBodyBytes != 1<<20 || cfg.OpenAIAPI.MaxMessages != 100 {
		t.Errorf("defaults: %+v", cfg.OpsConfig)
	}
	for _, tc := range []struct{ yaml, key string }{
		{"openai_api:\n  keys:\n    - key: short\n      user_id: u\n", "openai_api.keys[0].key"},
		{"openai_api:\n  keys:\n    - key: long-enough-key-0123456789\n", "openai_api.keys[0].user_id"},
		{"openai_api:\n  keys:\n    - key: long-enough-key-0123456789\n      user_id: u\n      models: [gpt-4]\n", "openai_api.keys[0].models"},
		{"log:\n  format: xml\n", "log.format"},
		{"log:\n  level: loud\n", "log.level"},
		{"tracing:\n  otlp_endpoint: collector:4318\n", "tracing.otlp_endpoint"},
	} {
		_, err := config.ParseConfig([]byte(base+tc.yaml), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: err = %v, want one naming %s", tc.yaml, err, tc.key)
		}
	}
}
