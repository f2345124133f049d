package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/web/console"
)

func TestRefusals(t *testing.T) {
	f := newFixture(t)
	base := f.srv.URL + "/console"

	t.Run("Unauthenticated", func(t *testing.T) {
		c := client(t)
		resp, err := c.Get(base + "/runs")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
			t.Errorf("page without a session: %d to %q, want 303 to the login", resp.StatusCode, resp.Header.Get("Location"))
		}
		if status, _ := postForm(t, c, base+"/skills/reload", url.Values{"csrf": {"x"}}); status != http.StatusUnauthorized {
			t.Errorf("POST without a session: %d, want 401", status)
		}
	})
	t.Run("NoCSRF", func(t *testing.T) {
		c := client(t)
		if status, _ := f.login(t, c, adminUser, adminPass); status != http.StatusSeeOther {
			t.Fatalf("login: %d", status)
		}
		if status, _ := postForm(t, c, base+"/skills/reload", nil); status != http.StatusForbidden {
			t.Errorf("POST without CSRF token: %d, want 403", status)
		}
		if status, _ := postForm(t, c, base+"/selftest", url.Values{"csrf": {"forged"}, "channel": {"wecom"}}); status != http.StatusForbidden {
			t.Errorf("POST with a wrong CSRF token: %d, want 403", status)
		}
		if status, _ := postForm(t, client(t), base+"/login", url.Values{"username": {adminUser}, "password": {adminPass}}); status != http.StatusForbidden {
			t.Errorf("login without its CSRF token: %d, want 403", status)
		}
	})
	t.Run("ViewerCannotAct", func(t *testing.T) {
		c := client(t)
		_, csrf := f.login(t, c, viewerUser, viewerPass)
		if status, _ := postForm(t, c, base+"/skills/reload", url.Values{"csrf": {csrf}}); status != http.StatusForbidden {
			t.Errorf("viewer reload: %d, want 403", status)
		}
		if status, _ := postForm(t, c, base+"/selftest", url.Values{"csrf": {csrf}, "channel": {"wecom"}, "account": {testApp}, "target": {"zhangsan"}}); status != http.StatusForbidden {
			t.Errorf("viewer self-test: %d, want 403", status)
		}
		if n := len(f.wecom.Requests()); n != 0 {
			t.Errorf("WeCom got %d sends from a viewer", n)
		}
	})
}

func TestPagesShowTheRunWithoutSecrets(t *testing.T) {
	f := newFixture(t)
	c := client(t)
	f.login(t, c, viewerUser, viewerPass)
	base := f.srv.URL + "/console"

	for _, tc := range []struct{ path, want string }{
		{"/", "test"},  // the account row of the test channel
		{"/", "acc-1"}, // ...and its account
		{"/conversations?user=zhangsan&period=1h", "/console/conversations/"},
		{"/runs?stop=finished&period=7d", f.runID},
		{"/runs/" + f.runID, "hr_leave_balance"},
		{"/runs/" + f.runID, "user=zhangsan corp=corp-test chat=zhangsan"},
		{"/skills", "hr_leave_balance"},
		{"/skills", "假期余额"},
	} {
		status, body := get(t, c, base+tc.path)
		if status != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d, want 200 showing %q", tc.path, status, tc.want)
		}
		noSecrets(t, tc.path, body)
	}
	if _, body := get(t, c, base+"/runs?stop=repeated_call"); strings.Contains(body, f.runID) {
		t.Errorf("the repeated_call filter lists a finished run")
	}
	// The thread links the answer to its run.
	sessions, err := store.FindConversations(context.Background(), f.pool, store.ConversationFilter{UserID: "zhangsan"})
	if err != nil || len(sessions) != 1 {
		t.Fatalf("sessions %v, %v", sessions, err)
	}
	_, body := get(t, c, base+"/conversations/"+itoa(sessions[0].ID))
	if !strings.Contains(body, askedText) || !strings.Contains(body, answeredText) || !strings.Contains(body, "/console/runs/"+f.runID) {
		t.Errorf("thread does not show the question, the answer and its run:\n%s", body)
	}
	if status, _ := get(t, c, base+"/runs/no-such-run"); status != http.StatusNotFound {
		t.Errorf("unknown run: %d, want 404", status)
	}
}

func TestSelfTestExplainsTrustedIP(t *testing.T) {
	f := newFixture(t)
	c := client(t)
	_, csrf := f.login(t, c, adminUser, adminPass)
	f.wecom.FailNextSends(60020, 1)
	status, body := postForm(t, c, f.srv.URL+"/console/selftest", url.Values{"csrf": {csrf}, "channel": {"wecom"},
		"account": {testApp}, "target": {"zhangsan"}})
	if status != http.StatusOK || !strings.Contains(body, "60020") || !strings.Contains(body, "企业可信IP") {
		t.Errorf("self-test against a refusing WeCom: %d, want the errcode explained:\n%s", status, body)
	}
	noSecrets(t, "self-test", body)
	// Nothing from this app ever reached Hermes: the page says to check the
	// callback URL (an unanswered challenge, a URL pointing elsewhere).
	if !strings.Contains(body, `id="st-nothing"`) {
		t.Errorf("self-test of an account that never received anything lacks the hint:\n%s", body)
	}
	status, body = postForm(t, c, f.srv.URL+"/console/selftest", url.Values{"csrf": {csrf}, "channel": {"wecom"},
		"account": {testApp}, "target": {"zhangsan"}})
	if status != http.StatusOK || !strings.Contains(body, `"errcode":0`) {
		t.Errorf("self-test: %d, want WeCom's ok:\n%s", status, body)
	}
	if n := len(f.wecom.Messages()); n != 1 {
		t.Errorf("WeCom delivered %d test messages, want 1", n)
	}
	status, _ = postForm(t, c, f.srv.URL+"/console/selftest", url.Values{"csrf": {csrf}, "channel": {"wecom"},
		"account": {"no-such-app"}, "target": {"zhangsan"}})
	if status != http.StatusBadRequest {
		t.Errorf("self-test of an unknown account: %d, want 400", status)
	}
}

func TestBootstrapCreatesTheFirstAdminOnce(t *testing.T) {
	ctx := context.Background()
	f := &fixture{}
	pool := openPool(t)
	f.pool = pool
	env := map[string]string{console.EnvBootstrapUser: "first", console.EnvBootstrapPassword: "first-password-1"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := console.Bootstrap(ctx, pool, lookup, discard()); err != nil {
		t.Fatal(err)
	}
	env[console.EnvBootstrapUser] = "second"
	if err := console.Bootstrap(ctx, pool, lookup, discard()); err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetAdmin(ctx, pool, "second"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bootstrap with an admin present created another: %v", err)
	}
	a, err := store.GetAdmin(ctx, pool, "first")
	if err != nil || a.Role != console.RoleAdmin || strings.Contains(string(a.PasswordHash), "first-password-1") {
		t.Errorf("first admin %+v, %v: want role admin and only a hash", a, err)
	}
	if err := console.CreateAdmin(ctx, pool, "x", "short", console.RoleViewer); !errors.Is(err, console.ErrInvalidAccount) {
		t.Errorf("short password: %v, want ErrInvalidAccount", err)
	}
	if err := console.CreateAdmin(ctx, pool, "first", "another-password", console.RoleViewer); !errors.Is(err, store.ErrExists) {
		t.Errorf("same username: %v, want ErrExists", err)
	}
}

func TestTextsComplete(t *testing.T) {
	// Every key a template reads exists.
	files, err := filepath.Glob("templates/*.html")
	if err != nil || len(files) == 0 {
		t.Fatalf("templates: %v, %v", files, err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`\.T\.(\w+)`).FindAllStringSubmatch(string(b), -1) {
			if console.Texts("zh")[m[1]] == "" {
				t.Errorf("%s reads text %q, which does not exist", file, m[1])
			}
		}
	}
	for _, lang := range []string{"zh", "en"} {
		for key := range console.Texts("zh") {
			if console.Texts(lang)[key] == "" {
				t.Errorf("%s lacks %q", lang, key)
			}
		}
		for key := range console.Texts("en") {
			if console.Texts(lang)[key] == "" {
				t.Errorf("%s lacks %q", lang, key)
			}
		}
	}
}

func TestOverviewShowsTheLastDeliveryError(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.ch.FailWith(func(channels.Outbound) error {
		return fmt.Errorf("chantest: recipient blocked the bot: %w", channels.ErrPermanent)
	})
	if _, err := f.gw.Accept(ctx, f.ch.Message("acc-1", "msg-leave-2", "lisi", "lisi", askedText, false, false)); err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var failed int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE failed_at IS NOT NULL`).Scan(&failed); err != nil {
			t.Fatal(err)
		}
		if failed > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the delivery never failed")
		case <-tick.C:
		}
	}
	c := client(t)
	f.login(t, c, viewerUser, viewerPass)
	_, body := get(t, c, f.srv.URL+"/console/")
	if !strings.Contains(body, "recipient blocked the bot") {
		t.Errorf("overview does not show the delivery error:\n%s", body)
	}
}
