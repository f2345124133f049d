package feishu_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// e2e is a real gateway (Postgres, workers, outbox) serving one Feishu app
// against the fake Feishu and a fake model.
type e2e struct {
	api    *feishutest.Server
	model  *openaitest.Server
	pool   *pgxpool.Pool
	gw     *gateway.Gateway
	url    string // the event URL
	crypto *feishu.Crypto
	offset atomic.Int64 // the gateway's clock runs this far ahead, ns
	cfg    *config.Config
	deps   gateway.Deps
}

func newE2E(t testing.TB, mode, extra string) *e2e {
	t.Helper()
	return newE2EWith(t, mode, extra, gateway.Deps{})
}

// newE2EWith is newE2E with deps' SkillsFS.
func newE2EWith(t testing.TB, mode, extra string, deps gateway.Deps) *e2e {
	t.Helper()
	h := &e2e{api: feishutest.NewServer(t, testAppID, testSecret), model: openaitest.NewServer(t), crypto: feishu.NewCrypto(testEncrypt)}
	dbURL := storetest.URL(t)
	ctx := context.Background()
	pool, err := store.Open(ctx, dbURL, 30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h.pool = pool
	yaml := fmt.Sprintf("database:\n  url: %s\nmodel:\n  base_url: %s\n  name: test-model\nfeishu:\n%s",
		dbURL, h.model.URL(), indent(appYAML(h.api.URL(), mode, extra)))
	cfg, err := config.ParseConfig([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	h.cfg, h.deps = cfg, gateway.Deps{
		Pool: pool, Platforms: []channels.Platform{feishu.Platform}, Logger: testLogger(t), SkillsFS: deps.SkillsFS,
		Now: func() time.Time { return time.Now().Add(time.Duration(h.offset.Load())) },
	}
	h.gw, h.url = h.replica(t)
	return h
}

// replica starts a gateway on the harness's database and configuration
// (another replica, after the first) and returns it with its event URL.
func (h *e2e) replica(t testing.TB) (*gateway.Gateway, string) {
	t.Helper()
	ctx := context.Background()
	gw, err := gateway.New(ctx, h.cfg, h.deps)
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
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	return gw, srv.URL + "/feishu/" + testAccount + "/events"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

// post sends an event as Feishu does, signed when it is sent: at the
// gateway's clock, which a test moves to play a retry hours later.
func (h *e2e) post(t testing.TB, plain []byte) int {
	t.Helper()
	hdr, body := feishutest.EncryptedRequest(h.crypto, plain, time.Now().Add(time.Duration(h.offset.Load())))
	status, resp, err := feishutest.Post(http.DefaultClient, h.url, hdr, body)
	if err != nil {
		t.Fatal(err)
	}
	if status != 200 {
		t.Logf("answer %d %s", status, resp)
	}
	return status
}

func (h *e2e) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := h.pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitIdle waits until every job has run: whatever was acknowledged has
// been answered and delivered.
func (h *e2e) waitIdle(t *testing.T) {
	t.Helper()
	ctx := withTimeout(t, 20*time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for h.count(t, storetest.OpenWork) > 0 {
		select {
		case <-ctx.Done():
			t.Fatal("work still open")
		case <-tick.C:
		}
	}
}

func TestEndToEndHTTP(t *testing.T) {
	h := newE2E(t, feishu.ModeHTTP, "")
	h.model.Script(openaitest.Reply{Content: "你还有 5 天年假。"})
	inbound := `SELECT count(*) FROM inbound_messages`

	// A group message that does not @ the bot is not answered.
	if status := h.post(t, feishutest.EventJSON(message("om_group", "group", "大家下午好"))); status != 200 {
		t.Fatalf("status %d", status)
	}
	// A forged signature is refused and stores nothing.
	hdr, body := feishutest.EncryptedRequest(h.crypto, feishutest.EventJSON(message("om_forged", "p2p", "hi")), time.Now())
	hdr.Set(feishu.HeaderSignature, strings.Repeat("a", 64))
	if status, _, _ := feishutest.Post(http.DefaultClient, h.url, hdr, body); status != http.StatusUnauthorized {
		t.Fatalf("forged: status %d", status)
	}

	// The same message delivered three times, hours apart (Feishu's
	// retries carry new event ids): one answer.
	m := message("om_e2e", "p2p", "我还有几天年假？")
	for i, after := range []time.Duration{0, time.Hour, 6 * time.Hour} {
		h.offset.Store(int64(after))
		m.EventID = fmt.Sprintf("ev-%d", i)
		if status := h.post(t, feishutest.EventJSON(m)); status != 200 {
			t.Fatalf("delivery %d: status %d", i, status)
		}
		h.waitIdle(t)
	}
	got := h.api.Replies()
	if len(got) != 1 {
		t.Fatalf("%d replies, want exactly 1: %+v", len(got), got)
	}
	// The answer is a card carrying the rating buttons (ratings.buttons).
	card := feishutest.ParseCard(got[0].Content)
	if got[0].To != "om_e2e" || got[0].MsgType != "interactive" || got[0].Text() != "你还有 5 天年假。" ||
		card.Title != "" || len(card.Buttons) != 2 || card.Buttons[0].Label != "👍 有用" || card.Buttons[1].Label != "👎 没用" {
		t.Fatalf("reply %+v", got[0])
	}
	if n := h.count(t, inbound); n != 1 {
		t.Fatalf("%d inbound rows, want 1 (group message without @ and forged one store nothing)", n)
	}
}

func TestEndToEndLongConnectionStreaming(t *testing.T) {
	h := newE2E(t, feishu.ModeWebSocket, "    streaming: true\n")
	h.model.Script(openaitest.Reply{Content: "工资条已发到你的邮箱。"})
	ctx := withTimeout(t, 20*time.Second)
	if err := h.api.WaitFor(ctx, func() bool { return h.api.Connections() == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := h.api.PushEvent(ctx, "frame-e2e", feishutest.EventJSON(message("om_ws", "p2p", "我的工资条")), 2); err != nil {
		t.Fatal(err)
	}
	if err := h.api.WaitFor(ctx, func() bool { return len(h.api.Acks()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if ack := h.api.Acks()[0]; ack.Code != 200 {
		t.Fatalf("ack %+v", ack)
	}
	// The card shows the final answer, streaming ends, and the answer is not
	// sent a second time as a message.
	done := func() bool {
		cards := h.api.Cards()
		if len(cards) != 1 || len(cards[0].Ops) < 2 {
			return false
		}
		ops := cards[0].Ops
		return ops[len(ops)-1].Kind == "settings" && ops[len(ops)-2].Content == "工资条已发到你的邮箱。"
	}
	if err := h.api.WaitFor(ctx, done); err != nil {
		t.Fatalf("card %+v: %v", h.api.Cards(), err)
	}
	// The part's delivery waits for the stream deadline; the stream marked
	// it shown, so that delivery will find nothing left to send.
	shown := func() bool {
		return h.count(t, `SELECT count(*) FROM outbox WHERE part = 0 AND platform_msg_id = 'stream' AND delivered_at IS NOT NULL`) == 1
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !shown() {
		select {
		case <-ctx.Done():
			t.Fatal("the streamed part was not marked shown")
		case <-tick.C:
		}
	}
	if got := h.api.Delivered(); len(got) != 1 || got[0].MsgType != "interactive" {
		t.Fatalf("replies %+v: the card alone shows the answer", got)
	}
}

// A repeated delivery of the same event (Feishu retries one whose answer
// it missed) opens no second card: only the delivery that stored the
// message starts the live reply.
func TestEndToEndStreamOpensOncePerMessage(t *testing.T) {
	h := newE2E(t, feishu.ModeHTTP, "    streaming: true\n")
	h.model.Script(openaitest.Reply{Content: "好"})
	m := message("om_once", "p2p", "hi")
	for i := range 2 {
		m.EventID = fmt.Sprintf("ev-once-%d", i)
		if status := h.post(t, feishutest.EventJSON(m)); status != 200 {
			t.Fatalf("delivery %d: status %d", i, status)
		}
	}
	ctx := withTimeout(t, 20*time.Second)
	if err := h.api.WaitFor(ctx, func() bool {
		cards := h.api.Cards()
		return len(cards) > 0 && len(cards[0].Ops) > 0 && cards[0].Ops[len(cards[0].Ops)-1].Kind == "settings"
	}); err != nil {
		t.Fatalf("card %+v: %v", h.api.Cards(), err)
	}
	h.waitIdle(t)
	if n := len(h.api.Cards()); n != 1 {
		t.Fatalf("%d cards", n)
	}
}
