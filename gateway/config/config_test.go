package config_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The example config documents every key; it must load with its env set.
func TestExampleConfigLoads(t *testing.T) {
	t.Chdir("../..") // paths in the example are relative to the repository root
	data, err := os.ReadFile("hermes.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.ParseConfig(data, env(map[string]string{
		"DATABASE_URL": "postgres://hermes@127.0.0.1/hermes", "HERMES_MODEL_BASE_URL": "https://api.deepseek.com/v1",
		"HERMES_MODEL_NAME": "deepseek-chat", "WECOM_CORP_ID": "ww1", "WECOM_HR_AGENT_ID": "1000002",
		"WECOM_HR_SECRET": "s", "WECOM_HR_TOKEN": "t", "WECOM_HR_AES_KEY": strings.Repeat("a", 43),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.RunTimeout != 90*time.Second || cfg.Worker.RescueAfter != 165*time.Second {
		t.Errorf("defaults: run_timeout %s rescue_after %s", cfg.Agent.RunTimeout, cfg.Worker.RescueAfter)
	}
	if cfg.Skills.BaseURL != "http://127.0.0.1:8090" {
		t.Errorf("${VAR:-default} expanded to %q", cfg.Skills.BaseURL)
	}
	if _, ok := cfg.Platforms["wecom"]; !ok || cfg.Messages.Unsupported == "" {
		t.Errorf("platform sections %v, messages %+v", cfg.Platforms, cfg.Messages)
	}
	if ep, err := cfg.Memory.EmbeddingsEndpoint(cfg.Model); err != nil || ep.On() || ep.MinSimilarity != 0.3 || ep.Timeout != 10*time.Second {
		t.Errorf("example's memory.embeddings: %+v, %v", ep, err)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	base := "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"
	cases := []struct{ name, yaml, want string }{
		{"MissingDatabase", "model:\n  provider: offline\n", "database.url: required"},
		{"MissingModelName", "database:\n  url: postgres://x@h/x\nmodel:\n  base_url: http://m/v1\n", "model.name: required"},
		{"UnknownKey", base + "agent:\n  max_step: 3\n", "unknown key max_step"},
		{"BadDuration", base + "agent:\n  run_timeout: soon\n", "soon"},
		{"EnvUnset", "database:\n  url: ${NOT_SET_ANYWHERE}\nmodel:\n  provider: offline\n", "database.url: required"},
		{"RescueTooShort", base + "worker:\n  rescue_after: 10s\n", "worker.rescue_after"},
		{"RunLeaseTooShort", base + "worker:\n  run_lease: 500ms\n", "worker.run_lease: must be at least 1s"},
		{"GroupCommitWaitTooLong", "database:\n  url: postgres://x@h/x\n  group_commit:\n    max_wait: 1s\nmodel:\n  provider: offline\n", "database.group_commit.max_wait"},
		{"GroupCommitTooManyWriters", "database:\n  url: postgres://x@h/x\n  max_conns: 10\n  group_commit:\n    writers: 6\nmodel:\n  provider: offline\n", "database.group_commit.writers"},
		{"DrainDelayNegative", base + "server:\n  drain_delay: -1s\n", "server.drain_delay"},
		{"NegativeRequestsPerMinute", "database:\n  url: postgres://x@h/x\nmodel:\n  provider: offline\n  requests_per_minute: -1\n", "model.requests_per_minute"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.ParseConfig([]byte(c.yaml), env(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	t.Run("OK", func(t *testing.T) {
		if _, err := config.ParseConfig([]byte(base), env(nil)); err != nil {
			t.Fatal(err)
		}
	})
}

// A secret with YAML-significant characters stays one value.
func TestEnvExpansionCannotChangeStructure(t *testing.T) {
	yaml := "database:\n  url: ${DB}\nmodel:\n  provider: offline\n"
	cfg, err := config.ParseConfig([]byte(yaml), env(map[string]string{"DB": "postgres://u:p#x: y@h/db\nmodel: {}"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database.URL != "postgres://u:p#x: y@h/db\nmodel: {}" || cfg.Model.Provider != "offline" {
		t.Fatalf("got url %q provider %q", cfg.Database.URL, cfg.Model.Provider)
	}
}
