package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// The AI bot end to end: WeCom's encrypted JSON callbacks or its long
// connection in, the real pipeline, the answer streamed back.

// The test AI bot's names and keys, as gatewaytest configures it.
const (
	botName   = gatewaytest.BotName
	botToken  = gatewaytest.BotToken
	botAESKey = gatewaytest.BotAESKey
	wsBotID   = gatewaytest.WSBotID
	wsSecret  = gatewaytest.WSSecret
)

// callbackBotYAML adds a callback-mode bot to the harness's wecom section.
func callbackBotYAML() string {
	return fmt.Sprintf("  bots:\n    - name: %s\n      corp_id: %s\n      token: %s\n      encoding_aes_key: %s\n",
		botName, gatewaytest.CorpID, botToken, botAESKey) + gatewaytest.LocalFetchYAML
}

// botCaller posts AI bot callbacks to the harness, as WeCom does.
type botCaller struct {
	t      testing.TB
	h      *gatewaytest.Harness
	crypto *wxbiz.Crypto
	now    func() time.Time
	nonce  atomic.Int64
}

func newBotCaller(t testing.TB, h *gatewaytest.Harness, now func() time.Time) *botCaller {
	c, err := wxbiz.NewCrypto(botToken, botAESKey, "")
	if err != nil {
		t.Fatal(err)
	}
	return &botCaller{t: t, h: h, crypto: c, now: now}
}

// postB is post reporting to tb.
func (b *botCaller) postB(tb testing.TB, plain []byte) wecomtest.BotReply {
	b.t = tb
	return b.post(plain)
}

// post sends plain as an encrypted callback and opens the passive reply
// (zero when the answer is an empty 200).
func (b *botCaller) post(plain []byte) wecomtest.BotReply {
	b.t.Helper()
	ts := strconv.FormatInt(b.now().Unix(), 10)
	nonce := "n" + strconv.FormatInt(b.nonce.Add(1), 10)
	q, body := wecomtest.BotCallback(b.crypto, plain, ts, nonce)
	status, resp := gatewaytest.Post(b.t, b.h.Srv.URL+"/wecom/bot/"+botName+"/callback?"+q.Encode(), body)
	if status != http.StatusOK {
		b.t.Fatalf("bot callback answered %d %q", status, resp)
	}
	if resp == "" {
		return wecomtest.BotReply{}
	}
	reply, err := wecomtest.OpenBotReply(b.crypto, []byte(resp), nonce)
	if err != nil {
		b.t.Fatal(err)
	}
	return reply
}

// refreshUntilFinished plays WeCom's stream refresh callbacks until the
// stream finishes, and returns every content shown.
func (b *botCaller) refreshUntilFinished(ctx context.Context, msg wecomtest.BotMessage) []string {
	b.t.Helper()
	var shown []string
	for ctx.Err() == nil {
		r := b.post(msg.StreamRefresh(msg.MsgID))
		if r.MsgType != "stream" || r.Stream.ID != msg.MsgID {
			b.t.Fatalf("refresh answered %+v, want the stream %s", r, msg.MsgID)
		}
		if len(shown) == 0 || shown[len(shown)-1] != r.Stream.Content {
			shown = append(shown, r.Stream.Content)
		}
		if r.Stream.Finish {
			return shown
		}
	}
	b.t.Fatalf("the stream never finished; shown %q", shown)
	return nil
}

func TestAIBotCallbackStreamsTheAnswerInAGroup(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	const answer = "你还有 7.5 天年假，其中 2 天今年底过期。"
	h.Model.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", `{}`)}},
		openaitest.Reply{Content: answer, ChunkInterval: 5 * time.Millisecond},
	)
	resp := wecomtest.NewResponseURLServer(t)
	h.StartExtra(callbackBotYAML(), gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	bot := newBotCaller(t, h, time.Now)

	msg := wecomtest.BotMessage{MsgID: "bm-1", AIBotID: wsBotID, ChatID: "grp-1", ChatType: "group",
		UserID: "zhangsan", ResponseURL: resp.URL("bm-1")}
	open := bot.post(msg.Text("@Hermes 我还有几天年假？"))
	if open.MsgType != "stream" || open.Stream.Finish || open.Stream.ID != "bm-1" {
		t.Fatalf("first answer %+v, want an open stream", open)
	}
	// The same message again (WeCom retries when our answer is lost) opens
	// the same stream and stores nothing new.
	if again := bot.post(msg.Text("@Hermes 我还有几天年假？")); again.Stream.ID != "bm-1" {
		t.Fatalf("repeat answered %+v", again)
	}
	shown := bot.refreshUntilFinished(ctx, msg)
	final := shown[len(shown)-1]
	if !strings.HasPrefix(final, "<@zhangsan>") || !strings.Contains(final, answer) {
		t.Fatalf("the stream finished with %q, want the answer mentioning the asker", final)
	}
	h.WaitIdle(ctx)
	if n := len(resp.Posts()); n != 0 {
		t.Fatalf("%d response_url posts; the stream showed the whole answer", n)
	}
	if n := h.Count(`SELECT count(*) FROM outbox WHERE delivered_at IS NOT NULL AND platform_msg_id = 'stream'`); n != 1 {
		t.Fatalf("outbox parts shown by the stream = %d, want 1", n)
	}
	if n := h.Count(`SELECT count(*) FROM inbound_messages`); n != 1 {
		t.Fatalf("inbound rows = %d, want 1", n)
	}
	// The model saw the question without the mention; the skill ran as the asker.
	if reqs := h.Model.Requests(); reqs[0].Messages[len(reqs[0].Messages)-1].Content != "我还有几天年假？" {
		t.Fatalf("the model saw %q", reqs[0].Messages[len(reqs[0].Messages)-1].Content)
	}
	if calls := h.Backend.Calls(); len(calls) != 1 || calls[0].Identity.UserID != "zhangsan" {
		t.Fatalf("skill calls %+v, want one as zhangsan", calls)
	}
}

// A run still going 6 minutes after the message: the stream is finished
// with a note, and the answer goes through the message's response_url.
func TestAIBotStreamDeadlineEndsThroughResponseURL(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var clock atomic.Int64
	t0 := time.Now()
	clock.Store(t0.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	release := make(chan struct{})
	h.Model.Script(openaitest.Reply{Content: "查好了：共 3 张工单。", Hook: func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}})
	resp := wecomtest.NewResponseURLServer(t)
	h.StartExtra(callbackBotYAML(), gateway.Deps{Now: now})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	bot := newBotCaller(t, h, now)

	msg := wecomtest.BotMessage{MsgID: "bm-late", AIBotID: wsBotID, ChatID: "zhangsan", ChatType: "single",
		UserID: "zhangsan", ResponseURL: resp.URL("bm-late")}
	bot.post(msg.Text("我提过几张工单？"))
	clock.Store(t0.Add(time.Minute).UnixNano())
	if r := bot.post(msg.StreamRefresh(msg.MsgID)); r.Stream.Finish {
		t.Fatalf("stream finished after a minute: %+v", r)
	}
	clock.Store(t0.Add(aibot.StreamLifetime).UnixNano())
	r := bot.post(msg.StreamRefresh(msg.MsgID))
	if !r.Stream.Finish || !strings.Contains(r.Stream.Content, config.DefaultMessages.Later) {
		t.Fatalf("at the deadline the stream answered %+v, want it finished with the note", r)
	}
	close(release)
	posts, err := resp.WaitPosts(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if len(resp.Posts()) != 1 || posts[0].Reply.Markdown.Content != "查好了：共 3 张工单。" {
		t.Fatalf("response_url got %+v, want the answer once", resp.Posts())
	}
}

// The long connection: one replica of two holds the bot's socket; a
// message is answered on it as a stream; when the holder is killed, the
// other takes the socket over and a message the dead one had stored is
// answered once, through the new socket.
func TestAIBotLongConnectionFailsOverToTheOtherReplica(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h := gatewaytest.New(t)
	ws := wecomtest.NewBotWSServer(t, wsBotID, wsSecret)
	// Short leases so that the dead holder's connection and session lapse
	// soon.
	extra := gatewaytest.WSBotYAML(ws.URL()) + "worker:\n  connection_lease: 2s\n  run_lease: 2s\n"
	cfgPath := filepath.Join(t.TempDir(), "hermes.yaml")
	if err := os.WriteFile(cfgPath, []byte(h.ConfigYAML(extra)), 0o600); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	var hung atomic.Bool
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		text := req.Messages[len(req.Messages)-1].Content
		if text == "第二个问题" && hung.CompareAndSwap(false, true) {
			return openaitest.Reply{Hook: func(ctx context.Context) error {
				once.Do(func() { close(started) })
				<-ctx.Done() // the holder is killed while its model call runs
				return ctx.Err()
			}}
		}
		return openaitest.Reply{Content: "答：" + text}
	})
	ctx := gatewaytest.WithTimeout(t, 120*time.Second)

	// Replica A, a separate process, holds the socket and answers.
	a := exec.Command(os.Args[0], "-test.run=^$")
	a.Env = append(os.Environ(), workerProcessEnv+"="+cfgPath)
	a.Stdout, a.Stderr = t.Output(), t.Output()
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Process.Kill(); _, _ = a.Process.Wait() })
	if _, err := ws.WaitSubscriptions(ctx, 1, true); err != nil {
		t.Fatal(err)
	}

	first := wecomtest.BotMessage{MsgID: "ws-1", AIBotID: wsBotID, ChatID: "grp-7", ChatType: "group", UserID: "lisi"}
	if _, err := ws.PushMessage(ctx, first.Text("@Hermes 第一个问题")); err != nil {
		t.Fatal(err)
	}
	done, err := ws.WaitFrame(ctx, func(f wecomtest.BotFrame) bool {
		return f.Cmd == "aibot_respond_msg" && f.Reply.Stream.Finish
	})
	if err != nil {
		t.Fatal(err)
	}
	if done.Conn != 1 || !strings.Contains(done.Reply.Stream.Content, "答：第一个问题") || !strings.HasPrefix(done.Reply.Stream.Content, "<@lisi>") {
		t.Fatalf("first answer %+v, want it streamed on A's socket mentioning lisi", done)
	}

	// A stores the second message, then dies while its model call runs.
	second := wecomtest.BotMessage{MsgID: "ws-2", AIBotID: wsBotID, ChatID: "grp-7", ChatType: "group", UserID: "lisi"}
	if _, err := ws.PushMessage(ctx, second.Text("@Hermes 第二个问题")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("replica A never ran the second message")
	}
	if err := a.Process.Kill(); err != nil { // SIGKILL: no lease release, no goodbye
		t.Fatal(err)
	}
	_, _ = a.Process.Wait()
	killed := time.Now()

	// Replica B (started now, so that it cannot take A's run before the
	// kill) waits out A's lease, connects, and answers the stored message.
	h.StartExtra(extra, gateway.Deps{})
	subs, err := ws.WaitSubscriptions(ctx, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replica B subscribed %s after the kill", subs[1].At.Sub(killed).Round(100*time.Millisecond))
	answer, err := ws.WaitFrame(ctx, func(f wecomtest.BotFrame) bool {
		return f.Cmd == "aibot_send_msg" && strings.Contains(f.Reply.Markdown.Content, "答：第二个问题")
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the stored message was answered %s after the kill", answer.At.Sub(killed).Round(100*time.Millisecond))
	// A's River job of the second message is still "running"; River's
	// rescuer makes it available again after worker.rescue_after. Do what
	// the rescuer does, now (B's jobs all started after the kill): the job
	// finds its message answered.
	if _, err := h.Pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now()
		WHERE state = 'running' AND attempted_at < $1`, killed); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	var copies int
	for _, f := range ws.Frames() {
		if strings.Contains(f.Reply.Markdown.Content+f.Reply.Stream.Content, "答：第二个问题") {
			copies++
		}
	}
	if copies != 1 || answer.Conn != 2 || answer.Reply.ChatID != "grp-7" || !strings.HasPrefix(answer.Reply.Markdown.Content, "<@lisi>") {
		t.Fatalf("second answer %+v (%d copies), want it once on B's socket to the group, mentioning lisi", answer, copies)
	}
}

// A takeover (disconnected_event: another client now holds the bot) makes
// the whole fleet stand back, not only the replica that was told: it keeps
// the connection lease for the pause, so the other replica does not
// subscribe against the client that took the bot.
func TestAIBotTakeoverKeepsEveryReplicaBack(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	ws := wecomtest.NewBotWSServer(t, wsBotID, wsSecret)
	extra := gatewaytest.WSBotYAML(ws.URL()) + "worker:\n  connection_lease: 2s\n"
	h.StartExtra(extra, gateway.Deps{})
	h.StartExtra(extra, gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	if _, err := ws.WaitSubscriptions(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	if err := ws.TakeOver(); err != nil {
		t.Fatal(err)
	}
	// The told replica keeps the lease for the 5-minute pause: far past the
	// 2 s term a renewal gives. Without it the lease is released and the
	// other replica takes it within half a second.
	gatewaytest.WaitFor(t, ctx, func() bool {
		return h.Count(`SELECT count(*) FROM leases WHERE name = $1 AND expires_at > now() + interval '4 minutes'`,
			"connection:wecom/"+botName) == 1
	})
	if subs, _ := ws.WaitSubscriptions(ctx, 1, true); len(subs) != 1 {
		t.Fatalf("%d subscriptions after the takeover, want the first only", len(subs))
	}
}
