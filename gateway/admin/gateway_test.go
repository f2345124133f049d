package admin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// TestAdminListener: with server.admin_listen set, the status page, the
// console and /metrics are 404 on the public listener and served on the
// admin one; callbacks and the health checks stay public.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	cfg := h.Config()
	cfg.Server.AdminListen = "127.0.0.1:9091"
	gw := h.StartConfig(cfg, gateway.Deps{})
	admin := httptest.NewServer(gw.AdminHandler())
	t.Cleanup(admin.Close)

	gatewaytest.AskLeave(t, h, "admin-listener-1") // the callback route is public
	for _, path := range []string{"/", "/console", "/console/", "/console/login", "/console/static/console.css", "/metrics"} {
		if status, _ := gatewaytest.Get(t, h.Srv.URL+path); status != http.StatusNotFound {
			t.Errorf("public %s: %d, want 404", path, status)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, _ := gatewaytest.Get(t, h.Srv.URL+path); status != http.StatusOK {
			t.Errorf("public %s: %d, want 200 (the load balancer's)", path, status)
		}
		if status, _ := gatewaytest.Get(t, admin.URL+path); status != http.StatusNotFound {
			t.Errorf("admin %s: %d, want 404", path, status)
		}
	}
	if status, _ := gatewaytest.Get(t, admin.URL+"/wecom/"+gatewaytest.App+"/callback"); status != http.StatusNotFound {
		t.Errorf("admin callback path: %d, want 404", status)
	}

	for path, want := range map[string]string{
		"/":              "/wecom/" + gatewaytest.App + "/callback", // the status page lists the callbacks
		"/console/login": `name="password"`,
		"/metrics":       `hermes_callbacks_total{channel="wecom",status="new"} 1`,
	} {
		status, body := gatewaytest.Get(t, admin.URL+path)
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("admin %s: %d, want 200 with %q:\n%.500s", path, status, want, body)
		}
	}
	// /console redirects into the console (to its start page, then the login).
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(admin.URL + "/console")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 3 {
		t.Errorf("admin /console: %d, want a redirect", resp.StatusCode)
	}
	// The admin listener's requests are measured too.
	if _, body := gatewaytest.Get(t, admin.URL+"/metrics"); !strings.Contains(body, `hermes_http_requests_total{code="200",route="/console/*path"}`) {
		t.Errorf("/metrics lacks the console's requests")
	}
}

// TestNoAdminListenerKeepsOneListener: without server.admin_listen every
// path is on the one listener, as before, and there is no admin handler.
func TestNoAdminListenerKeepsOneListener(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	gw := h.Start(gateway.Deps{})
	if gw.AdminHandler() != nil {
		t.Error("AdminHandler without server.admin_listen: want nil")
	}
	for _, path := range []string{"/", "/console/login", "/metrics", "/healthz"} {
		if status, _ := gatewaytest.Get(t, h.Srv.URL+path); status != http.StatusOK {
			t.Errorf("%s: %d, want 200", path, status)
		}
	}
}

// TestAdminListenValidated: a server.admin_listen that cannot be listened
// on, or is the public listener's, is refused naming the key.
func TestAdminListenValidated(t *testing.T) {
	t.Parallel()
	base := "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\nserver:\n  listen: \":8080\"\n"
	for yaml, want := range map[string]string{
		base + "  admin_listen: \"9090\"\n":  `server.admin_listen: must be host:port or :port, got "9090"`,
		base + "  admin_listen: \":8080\"\n": "server.admin_listen: must differ from server.listen",
	} {
		if _, err := config.ParseConfig([]byte(yaml), func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	cfg, err := config.ParseConfig([]byte(base+"  admin_listen: 127.0.0.1:9090\n"), func(string) (string, bool) { return "", false })
	if err != nil || cfg.Server.AdminListen != "127.0.0.1:9090" {
		t.Fatalf("a good admin_listen: %v, %+v", err, cfg)
	}
}

// TestConsoleWordsFromYAML: messages.console rewords the console served by
// a running gateway, and an unknown key stops the gateway naming it.
func TestConsoleWordsFromYAML(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.StartExtra("messages:\n  console:\n    zh:\n      login: 进入控制台\n", gateway.Deps{})
	if status, body := gatewaytest.Get(t, h.Srv.URL+"/console/login"); status != http.StatusOK || !strings.Contains(body, "进入控制台") {
		t.Fatalf("login page: %d, want messages.console.zh.login in it:\n%.800s", status, body)
	}
	for yaml, want := range map[string]string{
		"messages:\n  console:\n    zh:\n      titel: x\n": "messages.console.zh.titel: unknown key",
		"messages:\n  console:\n    fr:\n      title: x\n": "messages.console.fr: unknown language",
	} {
		_, err := gateway.New(t.Context(), h.ConfigWith(yaml), gateway.Deps{Pool: h.Pool, Platforms: gatewaytest.Platforms, Features: gatewaytest.NewFeatures(), Logger: gatewaytest.Logger(t)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("gateway.New = %v, want %q", err, want)
		}
	}
}
