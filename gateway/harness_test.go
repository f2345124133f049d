package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

// The official WeCom sample app (protocols.md), reused as the test app.
const (
	testCorpID  = "wx5823bf96d3bd56c7"
	testToken   = "QDG6eK"
	testAESKey  = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	testAgentID = "1000002"
	testApp     = "app-hr"
	testHMACKey = "test-identity-key"
)

// harnesses numbers the harnesses of this process.
var harnesses atomic.Int64

// heavyTests bounds the tests that hold many connections at once (two
// replicas or two processes on one database, or a burst of hundreds of
// messages), so that the tests running in parallel stay under the local
// server's max_connections (100).
var heavyTests = make(chan struct{}, 2)

// heavy marks t as one of those: it waits for a place among them.
func heavy(t testing.TB) {
	t.Helper()
	heavyTests <- struct{}{}
	t.Cleanup(func() { <-heavyTests })
}

// platforms are the platforms the test gateways know, as cmd/hermes
// registers them.
var platforms = []channels.Platform{wecom.Platform}

// harness is one Hermes with real Postgres, a fake WeCom API, a fake
// OpenAI-compatible model and the demo HR/IT backend.
type harness struct {
	t        testing.TB
	dbURL    string
	pool     *pgxpool.Pool
	wecomAPI *wecomtest.Server
	model    *openaitest.Server
	backend  *demobackend.Backend
	crypto   *wxbiz.Crypto
	// secret is this harness's app secret: apps of parallel tests share the
	// corp id, and WeCom API calls find their fake server by corp and secret.
	secret string
	// backendURL is where the skills call (skills.base_url).
	backendURL string
	gw         *gateway.Gateway
	srv        *httptest.Server // the public URL; serves the current gateway
	handler    atomic.Pointer[http.Handler]
	nonce      atomic.Int64
	// modelYAML are more keys of the model section (limits).
	modelYAML string
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{t: t}
	h.dbURL = storetest.URL(t)
	// The production default of database.max_conns.
	pool, err := store.Open(context.Background(), h.dbURL, 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h.pool = pool
	h.secret = fmt.Sprintf("test-app-secret-%d-0123456789", harnesses.Add(1))
	h.wecomAPI = wecomtest.NewServer(t, testCorpID, h.secret)
	h.model = openaitest.NewServer(t)
	h.backend = demobackend.New([]byte(testHMACKey), nil)
	backendSrv := httptest.NewServer(h.backend)
	t.Cleanup(backendSrv.Close)
	h.backendURL = backendSrv.URL
	h.crypto, err = wxbiz.NewCrypto(testToken, testAESKey, testCorpID)
	if err != nil {
		t.Fatal(err)
	}
	// One public address across gateway restarts, as behind a load balancer.
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hd := h.handler.Load(); hd != nil {
			(*hd).ServeHTTP(w, r)
			return
		}
		http.Error(w, "no gateway running", http.StatusServiceUnavailable)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// configYAML is the configuration a test gateway runs with, pointing at the
// fakes; extra is appended (top-level keys not used above).
func (h *harness) configYAML(extra string) string {
	return fmt.Sprintf(`
server:
  public_url: %s
  callback_key: test-callback-key-0123456789
router:
  api_keys:
    - key: test-router-key-0123456789
      user_id: zhangsan
      name: oa-system
      corp_id: %s
database:
  url: %s
model:
  base_url: %s
  name: test-model
%s
skills:
  dir: ../skills/samples
  base_url: %s
wecom:
  apps:
    - name: %s
      corp_id: %s
      agent_id: "%s"
      secret: %s
      token: %s
      encoding_aes_key: %s
      api_base_url: %s
%s
`, h.srv.URL, testCorpID, h.dbURL, h.model.URL(), h.modelYAML, h.backendURL, testApp, testCorpID, testAgentID, h.secret, testToken, testAESKey, h.wecomAPI.URL(), extra)
}

// config parses configYAML.
func (h *harness) config() *config.Config { return h.config2("") }

// config2 parses configYAML(extra).
func (h *harness) config2(extra string) *config.Config {
	cfg, err := config.ParseConfig([]byte(h.configYAML(extra)), os.LookupEnv)
	if err != nil {
		h.t.Fatal(err)
	}
	return cfg
}

// start runs a gateway (workers and HTTP) until the test ends.
func (h *harness) start(deps gateway.Deps) *gateway.Gateway {
	h.t.Helper()
	return h.startExtra("", deps)
}

// startExtra is start with configYAML(extra).
func (h *harness) startExtra(extra string, deps gateway.Deps) *gateway.Gateway {
	h.t.Helper()
	return h.startConfig(h.config2(extra), deps)
}

// startConfig runs a gateway with cfg (a changed h.config()).
func (h *harness) startConfig(cfg *config.Config, deps gateway.Deps) *gateway.Gateway {
	h.t.Helper()
	ctx := context.Background()
	if deps.Pool == nil {
		deps.Pool = h.pool
	}
	if deps.Logger == nil {
		deps.Logger = testLogger(h.t)
	}
	if deps.Platforms == nil {
		deps.Platforms = platforms
	}
	if deps.Features == nil {
		deps.Features = newFeatures()
	}
	gw, err := gateway.New(ctx, cfg, deps)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := gw.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Stop(stopCtx)
	})
	h.gw = gw
	hd := gw.Handler()
	h.handler.Store(&hd)
	return gw
}

// textXML is a WeCom text message from user.
func textXML(from, content, msgID string) string {
	return wecomtest.TextMessageXML(testCorpID, from, content, msgID, testAgentID, time.Now().Unix())
}

// callbackRequest builds the encrypted POST WeCom would send, signed at ts.
func (h *harness) callbackRequest(plainXML string, ts time.Time) (string, []byte) {
	nonce := strconv.FormatInt(h.nonce.Add(1), 10)
	q, body := wecomtest.EncryptedCallback(h.crypto, plainXML, strconv.FormatInt(ts.Unix(), 10), nonce)
	return h.srv.URL + "/wecom/" + testApp + "/callback?" + q.Encode(), body
}

// post sends a callback and returns status and body.
func post(t testing.TB, u string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(u, "text/xml", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitIdle waits until no job is left to run: everything acknowledged has
// been processed and delivered (or given up).
func (h *harness) waitIdle(ctx context.Context) {
	h.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var open int
		err := h.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&open)
		if err != nil {
			h.t.Fatal(err)
		}
		if open == 0 {
			return
		}
		select {
		case <-ctx.Done():
			var jobs string
			_ = h.pool.QueryRow(context.Background(), `SELECT string_agg(kind || '@' || queue || ':' || state, ', ') FROM river_job
				WHERE state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&jobs)
			h.t.Fatalf("jobs still open after waiting: %d (%s)", open, jobs)
		case <-tick.C:
		}
	}
}

// messageJobs counts the jobs a message creates: the job that answers
// it, the delivery of its reply, and what learns from it. Counting these
// kinds, not "every job but the periodic ones", keeps a periodic sweep
// that starts meanwhile from counting as a stored message.
func (h *harness) messageJobs() int {
	h.t.Helper()
	return h.count(`SELECT count(*) FROM river_job WHERE kind = ANY($1)`,
		[]string{gateway.ProcessInboundArgs{}.Kind(), gateway.DeliverReplyArgs{}.Kind(), memory.LearnArgs{}.Kind()})
}

func (h *harness) count(query string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// testLogger writes to the test's output, shown only for failed or -v runs.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func withTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition never held")
		case <-tick.C:
		}
	}
}
