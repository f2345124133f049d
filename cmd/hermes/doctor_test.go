package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
	"github.com/hermes-gw/hermes/skills"
)

const (
	doctorCorp   = "wx5823bf96d3bd56c7"
	doctorSecret = "doctor-app-secret-0123456789"
	doctorAES    = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
)

// doctorConfig is a config with two WeCom apps against a fake WeCom (one
// with a wrong secret unless both are right), the sample skills at
// skillsURL and the model at modelURL.
func doctorConfig(t *testing.T, wecomURL, secondSecret, skillsURL, modelURL string) string {
	skillsDir, _ := filepath.Abs("../../skills/samples")
	app := func(name, secret, agent string) string {
		return "    - name: " + name + "\n      corp_id: " + doctorCorp + "\n      agent_id: \"" + agent + "\"\n      secret: " + secret +
			"\n      token: QDG6eK\n      encoding_aes_key: " + doctorAES + "\n      api_base_url: " + wecomURL + "\n"
	}
	return writeConfig(t, "database:\n  url: "+storetest.URL(t)+"\nmodel:\n  base_url: "+modelURL+"\n  name: m\n"+
		"skills:\n  dir: "+skillsDir+"\n  base_url: "+skillsURL+"\n"+
		"wecom:\n  apps:\n"+app("app-ok", doctorSecret, "1000002")+app("app-other", secondSecret, "1000003"))
}

// TestDoctor: a wrong app secret and an unreachable skill backend fail
// with their fixes and exit 1; once both are right, every check passes.
func TestDoctor(t *testing.T) {
	t.Setenv(skills.SampleHRKeyEnv, "doctor-identity-key")
	t.Setenv(skills.SampleITKeyEnv, "doctor-identity-key")
	api := wecomtest.NewServer(t, doctorCorp, doctorSecret)
	live := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(live.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there any more

	code, out, errOut := runCmd(t, "", "doctor", "--config", doctorConfig(t, api.URL(), "wrong-secret-0123456789", closed.URL, live.URL))
	if code != 1 {
		t.Fatalf("doctor with a wrong secret: code %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		`(?m)^config\s+ok`,
		`(?m)^database\s+ok`,
		`(?m)^database: migrations\s+ok`,
		`(?m)^model endpoint\s+ok`,
		`(?m)^wecom/app-ok: access token\s+ok`,
		`(?m)^wecom/app-other: access token\s+FAIL\s+gettoken: errcode 40001: invalid app secret\n\s+fix: wecom.apps\[\].secret`,
		`(?m)^skill hr_leave_balance\s+FAIL\s+.*unreachable.*\n\s+fix: start the backend`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("doctor output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "wrong-secret") || strings.Contains(out, doctorSecret) {
		t.Errorf("doctor printed a secret:\n%s", out)
	}

	code, out, _ = runCmd(t, "", "doctor", "--config", doctorConfig(t, api.URL(), doctorSecret, live.URL, live.URL))
	if code != 0 || strings.Contains(out, "FAIL") {
		t.Fatalf("doctor with everything right: code %d\n%s", code, out)
	}
}

// TestDoctorBadConfig: a config error is the first and only failure.
func TestDoctorBadConfig(t *testing.T) {
	cfg := writeConfig(t, "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  base_url: https://api.example.com/v1\n")
	code, out, _ := runCmd(t, "", "doctor", "--config", cfg)
	if code != 1 || !regexp.MustCompile(`(?m)^config\s+FAIL\s+config: model.name`).MatchString(out) {
		t.Fatalf("code %d\n%s", code, out)
	}
}

// TestDoctorAsksEveryChannel: a channel that checks itself reports its
// findings; a database that is down is reported, not fatal.
func TestDoctorAsksEveryChannel(t *testing.T) {
	t.Setenv(skills.SampleHRKeyEnv, "doctor-identity-key")
	t.Setenv(skills.SampleITKeyEnv, "doctor-identity-key")
	ctx := context.Background()
	api := wecomtest.NewServer(t, doctorCorp, doctorSecret)
	live := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(live.Close)
	cfg, err := config.LoadConfig(doctorConfig(t, api.URL(), doctorSecret, live.URL, live.URL))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := openDB(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))

	ch := chantest.New("test", channels.Limits{MaxBytes: 2048, Format: channels.FormatMarkdown, Dialect: channels.DialectStandard})
	ch.SetChecks(channels.Check{Name: "test/main: token", Detail: "errcode 1", Fix: "set test.secret"})
	checks := doctor(ctx, cfg, gateway.Deps{Pool: pool, Platforms: platforms,
		Channels: []channels.Channel{ch}, Logger: logger})
	byName := map[string]channels.Check{}
	for _, c := range checks {
		byName[c.Name] = c
	}
	if c := byName["test/main: token"]; c.OK || c.Fix != "set test.secret" {
		t.Errorf("channel check = %+v", c)
	}
	if c := byName["wecom/app-ok: access token"]; !c.OK {
		t.Errorf("wecom check = %+v", c)
	}
	if c := byName["database"]; !c.OK {
		t.Errorf("database check = %+v", c)
	}

	down, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	checks = doctor(ctx, cfg, gateway.Deps{Pool: down, Platforms: platforms, Logger: logger})
	if checks[1].Name != "database" || checks[1].OK || !strings.Contains(checks[1].Fix, "database.url") {
		t.Errorf("database down: %+v", checks[1])
	}
}
