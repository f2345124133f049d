package dingtalk_test

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/dingtalk"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

const (
	appKey    = "dinge2eappkey"
	appSecret = "e2e-app-secret-0123456789"
	corpID    = "dinge2ecorp"
)

// hermes is one real gateway on Postgres with the DingTalk platform, a fake
// DingTalk and a fake model.
type hermes struct {
	t     testing.TB
	pool  *pgxpool.Pool
	fake  *dingtalktest.Server
	model *openaitest.Server
	clock *chantest.Clock
	url   string // the public base URL
	dbURL string
	robot string // the robot's extra keys
	// skills are the gateway's skills (gateway.Deps.SkillsFS); nil: none.
	skills fs.FS
}

// start runs a gateway whose one DingTalk robot has the extra keys robot.
func start(t testing.TB, robot string) *hermes {
	t.Helper()
	return startWith(t, robot, nil)
}

// startWith is start with the skills in skills.
func startWith(t testing.TB, robot string, skills fs.FS) *hermes {
	t.Helper()
	h := &hermes{t: t, clock: chantest.NewClock(time.Now()), dbURL: storetest.URL(t), robot: robot, skills: skills,
		fake: dingtalktest.NewServer(t, appKey, appSecret), model: openaitest.NewServer(t)}
	h.serve()
	return h
}

// replica runs another gateway on h's database, with h's DingTalk, model,
// clock and configuration.
func (h *hermes) replica() *hermes {
	h.t.Helper()
	r := *h
	r.serve()
	return &r
}

// serve starts the gateway on h.dbURL and sets h.pool and h.url.
func (h *hermes) serve() {
	t := h.t
	t.Helper()
	dbURL, robot := h.dbURL, h.robot
	pool, err := store.Open(context.Background(), dbURL, 30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h.pool = pool
	cfg, err := config.ParseConfig([]byte(fmt.Sprintf(`
database:
  url: %s
model:
  base_url: %s
  name: test-model
worker:
  draft_interval: 20ms
dingtalk:
  robots:
    - name: hr-bot
      app_key: %s
      app_secret: %s
      corp_id: %s
      api_base_url: %s
      oapi_base_url: %s
%s`, dbURL, h.model.URL(), appKey, appSecret, corpID, h.fake.URL(), h.fake.URL(), robot)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gw, err := gateway.New(ctx, cfg, gateway.Deps{
		Pool: pool, Platforms: []channels.Platform{dingtalk.Platform}, Now: h.clock.Now, SkillsFS: h.skills,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() {
		srv.Close()
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = gw.Stop(stopCtx)
	})
	h.url = srv.URL
}

// post delivers m to the callback, signed at the gateway's now with secret;
// the clock then moves on a millisecond, as DingTalk signs each callback
// when it sends it (a signature is good for one message).
func (h *hermes) post(m dingtalktest.Message, secret string) int {
	h.t.Helper()
	return h.postBody(m.JSON(), secret)
}

// postBody is post of a message's wire form (a picture, a file, ...).
func (h *hermes) postBody(body []byte, secret string) int {
	h.t.Helper()
	defer h.clock.Add(time.Millisecond)
	resp, err := http.DefaultClient.Do(dingtalktest.CallbackRequest(h.url+"/dingtalk/hr-bot/callback", secret, h.clock.Now(), body))
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (h *hermes) count(q string) int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// waitIdle waits until every job has run.
func (h *hermes) waitIdle(ctx context.Context) {
	h.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for h.count(storetest.OpenWork) > 0 {
		select {
		case <-ctx.Done():
			h.t.Fatal("work still open")
		case <-tick.C:
		}
	}
}

// waitFor waits until the count query q answers 1.
func (h *hermes) waitFor(ctx context.Context, q string) {
	h.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for h.count(q) != 1 {
		select {
		case <-ctx.Done():
			h.t.Fatalf("never true: %s", q)
		case <-tick.C:
		}
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// The same message delivered three times, two hours apart (each delivery
// signed when it is sent, so inside the window), gets one answer, through
// the session webhook while it is valid.
func TestE2E_OneAnswerForThreeDeliveries(t *testing.T) {
	h := start(t, "")
	h.model.Script(openaitest.Reply{Content: "您的年假还有 5 天。"})
	ctx := ctxFor(t, 60*time.Second)
	m := dingtalktest.Message{MsgID: "msg-annual", Text: "我还有几天年假？", ConversationID: "cid-zs", StaffID: "zhangsan", Nick: "张三",
		CorpID: corpID, SessionWebhook: h.fake.SessionWebhook("s-zs"), WebhookExpiresAt: h.clock.Now().Add(90 * time.Minute)}
	for i := range 3 {
		if i > 0 {
			h.clock.Add(2 * time.Hour)
		}
		if got := h.post(m, appSecret); got != http.StatusOK {
			t.Fatalf("delivery %d: status %d", i+1, got)
		}
		if err := h.fake.Wait(ctx, func(sent []dingtalktest.Sent, _ []dingtalktest.CardCall) bool { return len(sent) >= 1 }); err != nil {
			t.Fatal(err)
		}
		h.waitIdle(ctx)
	}
	sent := h.fake.Sent()
	if len(sent) != 1 || sent[0].Via != "webhook" || sent[0].Text != "您的年假还有 5 天。" {
		t.Fatalf("sent %+v, want one webhook reply", sent)
	}
	if n := len(h.model.Requests()); n != 1 {
		t.Errorf("model called %d times", n)
	}
	if n := h.count(`SELECT count(*) FROM inbound_messages WHERE channel = 'dingtalk'`); n != 1 {
		t.Errorf("%d inbound rows", n)
	}
}

// A forged signature and a group message without @ store nothing; a group
// message with @ is answered through the group API (its webhook is gone),
// naming the asker.
func TestE2E_GroupRulesAndForgery(t *testing.T) {
	h := start(t, "")
	h.model.Script(openaitest.Reply{Content: "工资条已发到您的邮箱。"})
	ctx := ctxFor(t, 60*time.Second)
	base := dingtalktest.Message{Group: true, ConversationID: "cid-group", StaffID: "lisi", Nick: "李四", CorpID: corpID}

	forged := base
	forged.MsgID, forged.Text, forged.InAtList = "msg-forged", "把工资条发给我", true
	if got := h.post(forged, "guessed-secret"); got != http.StatusUnauthorized {
		t.Errorf("forged: status %d, want 401", got)
	}
	plain := base
	plain.MsgID, plain.Text = "msg-chatter", "大家中午吃什么"
	if got := h.post(plain, appSecret); got != http.StatusOK {
		t.Errorf("no @: status %d", got)
	}
	if n := h.count(`SELECT count(*) FROM inbound_messages`); n != 0 {
		t.Fatalf("%d inbound rows stored for a forged and an unaddressed message", n)
	}
	asked := base
	asked.MsgID, asked.Text, asked.InAtList = "msg-asked", "帮我查工资条", true
	if got := h.post(asked, appSecret); got != http.StatusOK {
		t.Fatalf("with @: status %d", got)
	}
	if err := h.fake.Wait(ctx, func(sent []dingtalktest.Sent, _ []dingtalktest.CardCall) bool { return len(sent) >= 1 }); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(ctx)
	sent := h.fake.Sent()
	if len(sent) != 1 || sent[0].Via != "openapi" || sent[0].Conversation != "cid-group" || sent[0].Text != "@李四 工资条已发到您的邮箱。" {
		t.Fatalf("sent %+v", sent)
	}
	reqs := h.model.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Content, "帮我查工资条") {
		t.Errorf("model saw %+v", reqs)
	}
}

// Stream mode with an AI card: the frame is acked after the commit, the
// answer streams into the card and is shown there once; no markdown copy.
func TestE2E_StreamModeWithCard(t *testing.T) {
	h := start(t, `      mode: stream
      card_template_id: tpl.schema
      card_interval: 20ms
`)
	h.model.Script(openaitest.Reply{Content: "请假请在审批里提交「请假」单。", ChunkInterval: 20 * time.Millisecond})
	ctx := ctxFor(t, 60*time.Second)
	if err := h.fake.WaitStream(ctx, func(_ []dingtalktest.Ack, made, live int) bool { return live == 1 }); err != nil {
		t.Fatal(err)
	}
	m := dingtalktest.Message{MsgID: "msg-leave", Text: "怎么请假", ConversationID: "cid-ww", StaffID: "wangwu", CorpID: corpID}
	id, err := h.fake.PushCallback(ctx, m.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool {
		for _, a := range acks {
			if a.MessageID == id && a.Code == 200 {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if n := h.count(`SELECT count(*) FROM inbound_messages WHERE platform_msg_id = 'msg-leave'`); n != 1 {
		t.Fatalf("acked but %d rows stored", n)
	}
	final := func(_ []dingtalktest.Sent, cards []dingtalktest.CardCall) bool {
		return len(cards) > 0 && cards[len(cards)-1].Finalize
	}
	if err := h.fake.Wait(ctx, final); err != nil {
		t.Fatal(err)
	}
	// The delivery job of the first part stays snoozed until the stream
	// deadline, then finds it delivered: the stream recorded it as shown.
	h.waitFor(ctx, `SELECT count(*) FROM outbox WHERE part = 0 AND platform_msg_id = 'stream' AND delivered_at IS NOT NULL`)
	cards := h.fake.Cards()
	if cards[0].Op != "create" || cards[0].OpenSpaceID != "dtv1.card//IM_ROBOT.wangwu" {
		t.Errorf("first card call %+v", cards[0])
	}
	if last := cards[len(cards)-1]; last.Content != "请假请在审批里提交「请假」单。" {
		t.Errorf("final card %+v", last)
	}
	if sent := h.fake.Sent(); len(sent) != 0 {
		t.Errorf("also sent as messages: %+v", sent)
	}
}

// Two replicas share the Postgres token cache: a token DingTalk expired is
// fetched again once, for both.
func TestE2E_TokenRefreshedOnceAcrossReplicas(t *testing.T) {
	pool := storetest.NewPool(t)
	fake := dingtalktest.NewServer(t, appKey, appSecret)
	ctx := ctxFor(t, 30*time.Second)
	replica := func() channels.Channel {
		env := channels.Env{
			TokenCache: func(secret string) (channels.TokenCache, error) { return store.NewTokenCache(pool, secret, time.Now) },
			Now:        time.Now, Logger: slog.New(slog.NewTextHandler(t.Output(), nil)),
		}
		src := fmt.Sprintf("robots:\n  - name: hr-bot\n    app_key: %s\n    app_secret: %s\n    corp_id: %s\n    api_base_url: %s\n    oapi_base_url: %s\n",
			appKey, appSecret, corpID, fake.URL(), fake.URL())
		ch, err := dingtalk.Platform.New(ctx, func(v any) error { return yamlDecode(src, v) }, env)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	a, b := replica(), replica()
	out := channels.Outbound{Account: "hr-bot", ReplyTo: []byte(`{"conversation":"c1","user":"zhangsan","received":1}`), Text: "你好", Parts: 1}
	for i, ch := range []channels.Channel{a, b} {
		if _, err := ch.Send(ctx, out); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	fake.ExpireTokens()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, ch := range []channels.Channel{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); _, err := ch.Send(ctx, out); errs <- err }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := fake.TokenRequests(); n != 2 {
		t.Errorf("token requests %d, want 2 (the first and one refresh)", n)
	}
	if n := len(fake.Sent()); n != 4 {
		t.Errorf("sent %d, want 4", n)
	}
}

// HTTP mode with an AI card and an answer longer than one message: the
// card shows the first part, the delivery layer sends only the rest.
func TestE2E_LongAnswerCardThenRest(t *testing.T) {
	h := start(t, `      card_template_id: tpl.schema
      card_interval: 20ms
`)
	long := strings.Repeat("年假规则说明。", 1500) // 21000 bytes: two parts
	h.model.Script(openaitest.Reply{Content: long})
	ctx := ctxFor(t, 60*time.Second)
	m := dingtalktest.Message{MsgID: "msg-long", Text: "年假规则是什么", ConversationID: "cid-zl", StaffID: "zhaoliu", CorpID: corpID,
		SessionWebhook: h.fake.SessionWebhook("s-zl"), WebhookExpiresAt: h.clock.Now().Add(90 * time.Minute)}
	if got := h.post(m, appSecret); got != http.StatusOK {
		t.Fatalf("status %d", got)
	}
	if err := h.fake.Wait(ctx, func(sent []dingtalktest.Sent, cards []dingtalktest.CardCall) bool {
		return len(sent) == 1 && len(cards) > 0 && cards[len(cards)-1].Finalize
	}); err != nil {
		t.Fatal(err)
	}
	cards, sent := h.fake.Cards(), h.fake.Sent()
	first := cards[len(cards)-1].Content
	if strings.ReplaceAll(first+sent[0].Text, "\n", "") != long { // the split may leave a line break
		t.Errorf("card part (%d bytes) and message part (%d bytes) do not make the answer (%d bytes)", len(first), len(sent[0].Text), len(long))
	}
	if len(first) > dingtalk.MaxMarkdownBytes || sent[0].Via != "webhook" {
		t.Errorf("card part %d bytes, message via %s", len(first), sent[0].Via)
	}
}

// A file an employee sends the robot is fetched through
// messageFiles/download, without the token at the download host, and
// reaches the model as its name and rows.
func TestE2E_FileReachesTheModel(t *testing.T) {
	h := start(t, "")
	h.model.Script(openaitest.Reply{Content: "张三还有 5 天年假。"})
	ctx := ctxFor(t, 60*time.Second)
	code := h.fake.AddFile([]byte("姓名,部门,年假\n张三,研发,5\n"), "")
	m := dingtalktest.Message{MsgID: "msg-file", ConversationID: "cid-zs", StaffID: "zhangsan", CorpID: corpID,
		SessionWebhook: h.fake.SessionWebhook("s-zs"), WebhookExpiresAt: h.clock.Now().Add(90 * time.Minute)}
	if got := h.postBody(m.File(code, "年假.csv"), appSecret); got != http.StatusOK {
		t.Fatalf("status %d", got)
	}
	if err := h.fake.Wait(ctx, func(sent []dingtalktest.Sent, _ []dingtalktest.CardCall) bool { return len(sent) >= 1 }); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(ctx)
	reqs := h.model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model called %d times, want once", len(reqs))
	}
	if last := reqs[0].Messages[len(reqs[0].Messages)-1].Content; !strings.Contains(last, "年假.csv") || !strings.Contains(last, "张三 研发 5") {
		t.Errorf("model saw %q, want the file's name and rows", last)
	}
	if st := h.fake.FileStats(); st.Exchanges != 1 || st.Gets != 1 || st.TokenGets != 0 {
		t.Errorf("file traffic %+v, want one exchange and one download without the token", st)
	}
	if n := h.count(`SELECT count(*) FROM inbound_media WHERE name = '年假.csv' AND error = '' AND size > 0`); n != 1 {
		t.Errorf("%d stored attachments, want the file", n)
	}
}
