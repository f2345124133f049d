package gatewaytest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
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
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

// HMACKey signs the demo backend's calls: the sample skills' key for HR
// and IT alike.
const HMACKey = "test-identity-key"

// harnesses numbers the harnesses of this process.
var harnesses atomic.Int64

// heavyTests bounds the tests that hold many connections at once (two
// replicas or two processes on one database, or a burst of hundreds of
// messages), so that one test process stays well under the local server's
// max_connections (100) even beside another package's tests.
var heavyTests = make(chan struct{}, 2)

// Heavy marks t as one of those: it waits for a place among them.
func Heavy(t testing.TB) {
	t.Helper()
	heavyTests <- struct{}{}
	t.Cleanup(func() { <-heavyTests })
}

// alive bounds the harnesses alive at once in one test process: a
// harness's gateway may hold up to 20 connections (its pool), so four keep
// a process within ~85 of the server's 100 whatever -test.parallel it runs
// with (GOMAXPROCS by default outside gateway, which runs four at once).
// A test waits for a place in New; Heavy, where a test calls it, comes
// first, so the two never wait on each other in a circle.
var alive = make(chan struct{}, 4)

// Platforms are the platforms the test gateways know, as cmd/hermes
// registers them.
var Platforms = []channels.Platform{wecom.Platform}

// SamplesDir is the sample skills' directory, wherever the test runs.
var SamplesDir = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "skills", "samples")
}()

// sampleKeys sets the sample skills' HMAC keys once per process: the same
// for every test, so tests in parallel never see two values (t.Setenv
// would refuse a parallel test).
var sampleKeys = sync.OnceFunc(func() {
	os.Setenv(skills.SampleHRKeyEnv, HMACKey)
	os.Setenv(skills.SampleITKeyEnv, HMACKey)
})

// Harness is one Hermes with real Postgres, a fake WeCom API, a fake
// OpenAI-compatible model and the demo HR/IT backend.
type Harness struct {
	// T is the test the harness belongs to; it ends with it.
	T     testing.TB
	DBURL string
	// Pool is the database's pool (the production default of 20
	// connections), the one a started gateway uses unless Deps has one.
	Pool     *pgxpool.Pool
	WeComAPI *wecomtest.Server
	Model    *openaitest.Server
	Backend  *demobackend.Backend
	// Crypto signs and encrypts callbacks as the test WeCom app.
	Crypto *wxbiz.Crypto
	// Secret is this harness's app secret: apps of parallel tests share the
	// corp id, and WeCom API calls find their fake server by corp and secret.
	Secret string
	// BackendURL is where the skills call (skills.base_url).
	BackendURL string
	// Gateway is the gateway started last.
	Gateway *gateway.Gateway
	// Srv is the public URL; it serves what Serve was given last.
	Srv *httptest.Server
	// ModelYAML are more keys of the model section (limits), set before
	// a Start.
	ModelYAML string
	// AppCards turns the test WeCom app's cards on (wecom.apps[].cards),
	// set before a Start. Off, a confirmation is the typed one the
	// pipeline's tests drive; the cards' own tests (channels/wecom) turn
	// it on. A card's extra parts cost every confirmation test seconds.
	AppCards bool

	handler atomic.Pointer[http.Handler]
	nonce   atomic.Int64
}

// New makes a harness that lives until t ends; no gateway runs yet.
func New(t testing.TB) *Harness {
	t.Helper()
	sampleKeys()
	alive <- struct{}{}
	t.Cleanup(func() { <-alive }) // the last cleanup: after the gateway and pool
	h := &Harness{T: t}
	h.DBURL = storetest.URL(t)
	pool, err := store.Open(context.Background(), h.DBURL, 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h.Pool = pool
	h.Secret = fmt.Sprintf("test-app-secret-%d-0123456789", harnesses.Add(1))
	h.WeComAPI = wecomtest.NewServer(t, CorpID, h.Secret)
	h.Model = openaitest.NewServer(t)
	h.Backend = demobackend.New([]byte(HMACKey), nil)
	backendSrv := httptest.NewServer(h.Backend)
	t.Cleanup(backendSrv.Close)
	h.BackendURL = backendSrv.URL
	h.Crypto, err = wxbiz.NewCrypto(Token, AESKey, CorpID)
	if err != nil {
		t.Fatal(err)
	}
	// One public address across gateway restarts, as behind a load balancer.
	h.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hd := h.handler.Load(); hd != nil {
			(*hd).ServeHTTP(w, r)
			return
		}
		http.Error(w, "no gateway running", http.StatusServiceUnavailable)
	}))
	t.Cleanup(h.Srv.Close)
	return h
}

// Serve makes the public URL serve hd (a gateway's Handler, or a wrapper
// of it).
func (h *Harness) Serve(hd http.Handler) { h.handler.Store(&hd) }

// ConfigYAML is the configuration a test gateway runs with, pointing at the
// fakes; extra is appended (top-level keys not used above, or more keys
// of the wecom section).
func (h *Harness) ConfigYAML(extra string) string {
	return fmt.Sprintf(`
server:
  public_url: %s
  callback_key: test-callback-key-0123456789
router:
  api_keys:
    - key: %s
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
  dir: %s
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
      cards: %t
%s
`, h.Srv.URL, RouterKey, CorpID, h.DBURL, h.Model.URL(), h.ModelYAML, SamplesDir, h.BackendURL,
		App, CorpID, AgentID, h.Secret, Token, AESKey, h.WeComAPI.URL(), h.AppCards, extra)
}

// Config parses ConfigYAML("").
func (h *Harness) Config() *config.Config { return h.ConfigWith("") }

// ConfigWith parses ConfigYAML(extra).
func (h *Harness) ConfigWith(extra string) *config.Config {
	cfg, err := config.ParseConfig([]byte(h.ConfigYAML(extra)), os.LookupEnv)
	if err != nil {
		h.T.Fatal(err)
	}
	return cfg
}

// Start runs a gateway (workers and HTTP) until the test ends.
func (h *Harness) Start(deps gateway.Deps) *gateway.Gateway {
	h.T.Helper()
	return h.StartExtra("", deps)
}

// StartExtra is Start with ConfigYAML(extra).
func (h *Harness) StartExtra(extra string, deps gateway.Deps) *gateway.Gateway {
	h.T.Helper()
	return h.StartConfig(h.ConfigWith(extra), deps)
}

// StartConfig runs a gateway with cfg (a changed h.Config()). What deps
// leaves unset is the harness's: its pool, a logger to the test's output,
// Platforms, and NewFeatures.
func (h *Harness) StartConfig(cfg *config.Config, deps gateway.Deps) *gateway.Gateway {
	h.T.Helper()
	ctx := context.Background()
	if deps.Pool == nil {
		deps.Pool = h.Pool
	}
	if deps.Logger == nil {
		deps.Logger = Logger(h.T)
	}
	if deps.Platforms == nil {
		deps.Platforms = Platforms
	}
	if deps.Features == nil {
		deps.Features = NewFeatures()
	}
	gw, err := gateway.New(ctx, cfg, deps)
	if err != nil {
		h.T.Fatal(err)
	}
	if err := gw.Start(ctx); err != nil {
		h.T.Fatal(err)
	}
	h.T.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Stop(stopCtx)
	})
	h.Gateway = gw
	h.Serve(gw.Handler())
	return gw
}

// NewPool is another pool of at most maxConns on the harness's database
// (a second replica's), closed when the test ends.
func (h *Harness) NewPool(maxConns int32) *pgxpool.Pool {
	h.T.Helper()
	pool, err := store.Open(context.Background(), h.DBURL, maxConns)
	if err != nil {
		h.T.Fatal(err)
	}
	h.T.Cleanup(pool.Close)
	return pool
}
