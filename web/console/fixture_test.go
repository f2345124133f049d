package console_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/admin"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
	"github.com/hermes-gw/hermes/web/console"
)

// The official WeCom sample app (protocols.md) and the secrets the pages
// must never show.
const (
	testCorpID   = "wx5823bf96d3bd56c7"
	testToken    = "QDG6eK"
	testAESKey   = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	testSecret   = "test-app-secret-0123456789"
	testHMACKey  = "test-identity-key-console"
	testApp      = "app-hr"
	adminUser    = "root"
	adminPass    = "correct-horse-battery"
	viewerUser   = "auditor"
	viewerPass   = "read-only-password"
	askedText    = "我还有几天年假？"
	answeredText = "你还有 5 天年假。"
)

// secrets are values no console page may contain.
var secrets = []string{testSecret, testAESKey, testHMACKey}

// fixture is a running gateway (real Postgres, fake model, fake WeCom, the
// demo HR backend) that has answered one message with a skill call, and two
// console accounts.
type fixture struct {
	pool  *pgxpool.Pool
	wecom *wecomtest.Server
	srv   *httptest.Server
	ch    *chantest.Channel
	gw    *gateway.Gateway
	// reports is the gateway's reports feature.
	reports *reports.Service
	runID   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{}
	dbURL := storetest.URL(t)
	pool, err := store.Open(ctx, dbURL, 30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f.pool = pool
	f.wecom = wecomtest.NewServer(t, testCorpID, testSecret)
	model := openaitest.NewServer(t)
	model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleTool {
			return openaitest.Reply{Content: answeredText}
		}
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", `{}`)}}
	})
	backend := httptest.NewServer(demobackend.New([]byte(testHMACKey), nil))
	t.Cleanup(backend.Close)
	t.Setenv(skills.SampleHRKeyEnv, testHMACKey)
	t.Setenv(skills.SampleITKeyEnv, testHMACKey)

	cfg, err := config.ParseConfig([]byte(fmt.Sprintf(`
database:
  url: %s
model:
  base_url: %s
  name: test-model
skills:
  dir: ../../skills/samples
  base_url: %s
wecom:
  apps:
    - name: %s
      corp_id: %s
      agent_id: "1000002"
      secret: %s
      token: %s
      encoding_aes_key: %s
      api_base_url: %s
alerts:
  rules:
    - {name: 投递失败, when: deliveries_failed, above: 2, to: {channel: wecom, account: %s, chat_type: single, chat_id: ops-lead}}
`, dbURL, model.URL(), backend.URL, testApp, testCorpID, testSecret, testToken, testAESKey, f.wecom.URL(), testApp)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ch := chantest.New("test", channels.Limits{MaxBytes: 2048, Format: channels.FormatText})
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	f.reports = reports.New()
	gw, err := gateway.New(ctx, cfg, gateway.Deps{Pool: pool, Platforms: []channels.Platform{wecom.Platform},
		Channels: []channels.Channel{ch}, Logger: logger, Features: []gateway.Feature{f.reports, admin.New(admin.ServiceReports{Service: f.reports})}})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Stop(stopCtx)
	})
	f.ch, f.gw = ch, gw
	f.srv = httptest.NewServer(gw.Handler())
	t.Cleanup(f.srv.Close)

	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	in := ch.Message("acc-1", "msg-leave-1", "zhangsan", "zhangsan", askedText, false, false)
	if _, err := gw.Accept(waitCtx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.WaitSent(waitCtx, 1); err != nil {
		t.Fatal(err)
	}
	ids, err := store.RunIDsByMessage(ctx, pool, "msg-leave-1")
	if err != nil || len(ids) != 1 {
		t.Fatalf("runs of the message: %v, %v", ids, err)
	}
	f.runID = ids[0]

	if err := console.CreateAdmin(ctx, pool, adminUser, adminPass, console.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if err := console.CreateAdmin(ctx, pool, viewerUser, viewerPass, console.RoleViewer); err != nil {
		t.Fatal(err)
	}
	return f
}

// client is an HTTP client with its own cookies that does not follow
// redirects, so tests see them.
func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// get fetches path and returns status and body.
func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, html.UnescapeString(string(b))
}

// postForm posts form values and returns status and body.
func postForm(t *testing.T, c *http.Client, u string, form url.Values) (int, string) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, html.UnescapeString(string(b))
}

// csrfOf returns the CSRF token of the first form in body.
func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf field in page:\n%s", body)
	}
	return m[1]
}

// login signs c in as user and returns the session's CSRF token; the
// status of the login POST is returned too.
func (f *fixture) login(t *testing.T, c *http.Client, user, password string) (int, string) {
	t.Helper()
	_, page := get(t, c, f.srv.URL+"/console/login")
	status, _ := postForm(t, c, f.srv.URL+"/console/login", url.Values{
		"csrf": {csrfOf(t, page)}, "username": {user}, "password": {password}})
	if status != http.StatusSeeOther {
		return status, ""
	}
	_, home := get(t, c, f.srv.URL+"/console/")
	return status, csrfOf(t, home)
}

// noSecrets fails when body shows a secret.
func noSecrets(t *testing.T, page, body string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(body, s) {
			t.Errorf("%s shows a secret", page)
		}
	}
}

// openPool is a fresh migrated database without a gateway.
func openPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := store.Open(context.Background(), storetest.URL(t), 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// serveAsAdmin serves c, a console of a test's own (not the fixture's),
// and signs an admin in: its address and the admin's client.
func serveAsAdmin(t *testing.T, pool *pgxpool.Pool, c *console.Console) (string, *http.Client) {
	t.Helper()
	if err := console.CreateAdmin(context.Background(), pool, adminUser, adminPass, console.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	cl := client(t)
	_, page := get(t, cl, srv.URL+"/console/login")
	if status, _ := postForm(t, cl, srv.URL+"/console/login", url.Values{"csrf": {csrfOf(t, page)}, "username": {adminUser}, "password": {adminPass}}); status != http.StatusSeeOther {
		t.Fatalf("login: %d", status)
	}
	return srv.URL, cl
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func itoa(n int64) string { return fmt.Sprint(n) }
