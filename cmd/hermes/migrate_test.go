package main

import (
	"strings"
	"testing"
)

// TestMigrateChecksPlatformsLikeServe: a platform section serve would
// refuse fails `hermes migrate` (and serve) with exit 1 naming the key,
// before the database is touched: the database here does not exist, so an
// error about connecting would mean it was tried first.
func TestMigrateChecksPlatformsLikeServe(t *testing.T) {
	t.Parallel()
	const head = "database:\n  url: postgres://nobody@127.0.0.1:1/nothing\nmodel:\n  provider: offline\n"
	app := func(extra string) string {
		return "wecom:\n  apps:\n    - name: app-hr\n      corp_id: wx5823bf96d3bd56c7\n      agent_id: \"1000002\"\n      secret: s\n" +
			"      token: QDG6eK\n" + extra
	}
	const goodKey = "      encoding_aes_key: jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C\n"
	for name, tc := range map[string]struct{ yaml, want string }{
		"UnknownKeyInSection": {head + app(goodKey+"      secrett: typo\n"), "unknown key secrett"},
		"UnknownPlatform":     {head + "wecon:\n  apps: []\n", "unknown key wecon"},
		"BadValue":            {head + app("      encoding_aes_key: too-short\n"), "encoding_aes_key"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, tc.yaml)
			for _, cmd := range []string{"migrate", "serve"} {
				code, _, errOut := runCmd(t, "", cmd, "--config", cfg)
				if code != 1 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "connect") {
					t.Errorf("hermes %s: exit %d, stderr %q; want 1 naming %q, before connecting", cmd, code, errOut, tc.want)
				}
			}
		})
	}
}
