package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

func TestAdminCreateReadsThePasswordFromStdin(t *testing.T) {
	url := storetest.URL(t)
	cfg := writeConfig(t, "database:\n  url: "+url+"\nmodel:\n  provider: offline\n")
	var out, errOut bytes.Buffer
	std := stdio{in: strings.NewReader("a-long-password-1\n"), out: &out, err: &errOut}
	if code := run(context.Background(), []string{"admin", "create", "--config", cfg, "--user", "ops", "--role", "viewer"}, std); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	pool, err := store.Open(context.Background(), url, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	a, err := store.GetAdmin(context.Background(), pool, "ops")
	if err != nil || a.Role != "viewer" || strings.Contains(string(a.PasswordHash), "a-long-password-1") {
		t.Fatalf("account %+v, %v: want a viewer with a hashed password", a, err)
	}
	// The same name again, and a short password, fail without a change.
	std.in = strings.NewReader("a-long-password-2\n")
	if code := run(context.Background(), []string{"admin", "create", "--config", cfg, "--user", "ops"}, std); code != 1 {
		t.Errorf("existing user: exit %d, want 1", code)
	}
	t.Setenv(envAdminPassword, "short")
	if code := run(context.Background(), []string{"admin", "create", "--config", cfg, "--user", "other"}, std); code != 1 || !strings.Contains(errOut.String(), "password") {
		t.Errorf("short password: exit %d (%s), want 1 naming the password", code, errOut.String())
	}
}
