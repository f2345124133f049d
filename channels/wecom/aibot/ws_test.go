package aibot_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

const (
	wsBotID  = "aibBOT1"
	wsSecret = "s3cret-long-connection"
)

// wsBot is a websocket-mode bot connected to a fake WeCom gateway.
type wsBot struct {
	bot   *aibot.Bot
	ch    *wecom.Channel
	srv   *wecomtest.BotWSServer
	sink  *chantest.Sink
	clock *chantest.Clock
	logs  *chantest.LogBuffer
	// logged receives the message of every log record, to wait on.
	logged chan string
	done   chan error // Run's result
	stop   context.CancelFunc
	panics *atomic.Int32 // Env.Panicked calls
}

// tapHandler copies each record's message to tap (dropping it when tap is
// full) so that a test can wait for what the bot logged.
type tapHandler struct {
	slog.Handler
	tap chan string
}

func (h tapHandler) Handle(ctx context.Context, r slog.Record) error {
	select {
	case h.tap <- r.Message:
	default:
	}
	return h.Handler.Handle(ctx, r)
}

func (h tapHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return tapHandler{Handler: h.Handler.WithAttrs(as), tap: h.tap}
}

func (h tapHandler) WithGroup(name string) slog.Handler {
	return tapHandler{Handler: h.Handler.WithGroup(name), tap: h.tap}
}

// waitLogged blocks until the bot logs a message containing what.
func (w *wsBot) waitLogged(t *testing.T, what string) {
	t.Helper()
	ctx := waitCtx(t)
	for {
		select {
		case m := <-w.logged:
			if strings.Contains(m, what) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("never logged %q; logs:\n%s", what, w.logs)
		}
	}
}

type wsOpts struct {
	secret  string        // default wsSecret
	ping    time.Duration // default 1h: no pings unless a test wants them
	backoff []time.Duration
	srv     *wecomtest.BotWSServer // default a new one
}

// startWSBot runs a bot's connection against a fake gateway until the
// test ends.
func startWSBot(t *testing.T, o wsOpts) *wsBot {
	t.Helper()
	if o.secret == "" {
		o.secret = wsSecret
	}
	if o.ping == 0 {
		o.ping = time.Hour
	}
	if o.backoff == nil {
		o.backoff = []time.Duration{5 * time.Millisecond}
	}
	srv := o.srv
	if srv == nil {
		srv = wecomtest.NewBotWSServer(t, wsBotID, wsSecret)
	}
	clock := chantest.NewClock(botT0)
	logs, logged := &chantest.LogBuffer{}, make(chan string, 1000)
	logger := slog.New(tapHandler{Handler: slog.NewTextHandler(logs, nil), tap: logged})
	panics := &atomic.Int32{}
	bot, err := aibot.New(aibot.Config{
		Name: botName, Mode: aibot.ModeWebSocket, CorpID: botCorpID,
		BotID: wsBotID, Secret: o.secret, URL: srv.URL(),
	}, 0, channels.Env{Now: clock.Now, Logger: logger, Messages: botMessages, Panicked: func(channel, account string) {
		if channel == wecom.ChannelName && account == botName {
			panics.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	// A generous ack timeout: a subscribe acked late would look refused
	// here while the fake counts it, and the replicas would swap roles.
	aibot.SetBotTiming(bot, o.ping, 2*time.Second, 5*time.Millisecond, o.backoff...)
	ch := wecom.NewChannel().WithBots(bot)
	conns := ch.Connections()
	if len(conns) != 1 || conns[0].Account != botName || !conns[0].Exclusive {
		t.Fatalf("Connections = %+v, want one exclusive connection", conns)
	}
	if routes := ch.Routes(nil); len(routes) != 0 {
		t.Fatalf("a websocket bot has routes: %+v", routes)
	}
	ctx, stop := context.WithCancel(context.Background())
	w := &wsBot{bot: bot, ch: ch, srv: srv, sink: chantest.NewSink().WithReceived(botT0), clock: clock, logs: logs, logged: logged, done: make(chan error, 1), stop: stop, panics: panics}
	// The gateway's reconnect loop, as the gateway runs it: panics it
	// recovers count where Env.Panicked does.
	watch := channels.Watch{Log: logger, Panicked: func() { panics.Add(1) }}
	go func() { w.done <- channels.Reconnect(ctx, conns[0], w.sink, watch) }()
	t.Cleanup(func() {
		stop()
		<-w.done
	})
	return w
}

// nextStarted is the next message the sink started answering; a test
// fails rather than hangs when none comes.
func nextStarted(t *testing.T, s *chantest.Sink) channels.Inbound {
	t.Helper()
	select {
	case in := <-s.Started():
		return in
	case <-time.After(20 * time.Second):
		t.Fatal("no message reached the sink in 20s")
		return channels.Inbound{}
	}
}

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (w *wsBot) frame(t *testing.T, match func(wecomtest.BotFrame) bool) wecomtest.BotFrame {
	t.Helper()
	f, err := w.srv.WaitFrame(waitCtx(t), match)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (w *wsBot) subscribed(t *testing.T, n int) []wecomtest.Subscription {
	t.Helper()
	subs, err := w.srv.WaitSubscriptions(waitCtx(t), n, true)
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

// liveEnd is how a live reply ended (channels.RunLive's result).
type liveEnd struct {
	shown bool
	err   error
}

// runLive runs the live reply to in as the gateway does once Accept
// returned: channels.RunLive with the bot's Live, reading the sink's
// scripted progress, on the bot's clock.
func (w *wsBot) runLive(t *testing.T, in channels.Inbound) <-chan liveEnd {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan liveEnd, 1)
	ref := channels.MessageRef{Channel: wecom.ChannelName, Account: botName, MsgID: in.MsgID}
	go func() {
		shown, err := channels.RunLive(ctx, channels.LiveRun{
			Replier: w.ch,
			Open: channels.Outbound{Account: botName, ReplyTo: in.ReplyTo, Format: channels.FormatMarkdown,
				Text: botThink, Parts: 1, Answer: true},
			Progress: channels.ProgressFunc(func(ctx context.Context) (channels.Progress, error) { return w.sink.Progress(ctx, ref) }),
			Received: w.clock.Now(), Later: botLater, Now: w.clock.Now,
		})
		done <- liveEnd{shown, err}
	}()
	t.Cleanup(cancel)
	return done
}

// wait returns how the live reply ended.
func wait(t *testing.T, done <-chan liveEnd) liveEnd {
	t.Helper()
	select {
	case end := <-done:
		return end
	case <-waitCtx(t).Done():
		t.Fatal("the live reply never ended")
		return liveEnd{}
	}
}

func msg(id string) wecomtest.BotMessage {
	return wecomtest.BotMessage{MsgID: id, AIBotID: wsBotID, ChatType: "single", UserID: "lisi"}
}

func TestBotWS_StreamsAndSends(t *testing.T) {
	w := startWSBot(t, wsOpts{})
	w.subscribed(t, 1)
	w.waitLogged(t, "long connection subscribed") // the bot holds the socket
	gate := w.sink.Hold()

	reqID, err := w.srv.PushMessage(waitCtx(t), msg("w-1").Text("报销流程？"))
	if err != nil {
		t.Fatal(err)
	}
	in := nextStarted(t, w.sink)
	if in.MsgID != "w-1" || in.Text != "报销流程？" || in.Sender.UserID != "lisi" || in.ChatID != "lisi" {
		t.Fatalf("Inbound = %+v", in)
	}
	if got := w.srv.Frames(); len(got) != 0 {
		t.Fatalf("frames sent before Accept returned: %+v", got)
	}
	close(gate)
	// The gateway then runs the message's live reply on this replica.
	// (While it runs, the delivery layer holds the first part back:
	// gateway/live_test.go.)
	live := w.runLive(t, in)

	isStream := func(content string, finish bool) func(wecomtest.BotFrame) bool {
		return func(f wecomtest.BotFrame) bool {
			return f.Cmd == "aibot_respond_msg" && f.ReqID == reqID && f.Reply.Stream.ID == "w-1" &&
				f.Reply.Stream.Content == content && f.Reply.Stream.Finish == finish
		}
	}
	w.frame(t, isStream(botThink, false))
	w.sink.SetProgress("w-1", channels.Progress{Known: true, Text: "第一步"})
	w.frame(t, isStream("第一步", false))
	w.sink.SetProgress("w-1", channels.Progress{Known: true, Text: "第一步，第二步", Done: true})
	w.frame(t, isStream("第一步，第二步", true))
	if end := wait(t, live); !end.shown || end.err != nil {
		t.Fatalf("live reply ended %+v, want the first part shown", end)
	}

	// A part after the first is pushed with aibot_send_msg.
	_, err = w.ch.Send(waitCtx(t), channels.Outbound{Account: botName, ReplyTo: in.ReplyTo, Text: "第三步", Part: 1, Parts: 2})
	if err != nil {
		t.Fatal(err)
	}
	f := w.frame(t, func(f wecomtest.BotFrame) bool { return f.Cmd == "aibot_send_msg" })
	if f.Reply.ChatID != "lisi" || f.Reply.MsgType != "markdown" || f.Reply.Markdown.Content != "第三步" || f.ReqID == reqID {
		t.Fatalf("aibot_send_msg = %+v", f)
	}
	// Frames on one req_id went one at a time, in order.
	var contents []string
	for _, f := range w.srv.Frames() {
		if f.ReqID == reqID {
			contents = append(contents, f.Reply.Stream.Content)
		}
	}
	if strings.Join(contents, "|") != botThink+"|第一步|第一步，第二步" {
		t.Fatalf("stream frames %q", contents)
	}
}

func TestBotWS_StreamDeadline(t *testing.T) {
	w := startWSBot(t, wsOpts{})
	w.subscribed(t, 1)
	w.waitLogged(t, "long connection subscribed") // the bot holds the socket
	m := msg("w-late")
	m.ChatType, m.ChatID = "group", "wrg"
	reqID, err := w.srv.PushMessage(waitCtx(t), m.Text("@HR助手 很长的问题"))
	if err != nil {
		t.Fatal(err)
	}
	live := w.runLive(t, nextStarted(t, w.sink))
	w.frame(t, func(f wecomtest.BotFrame) bool { return f.ReqID == reqID })
	w.sink.SetProgress("w-late", channels.Progress{Known: true, Text: "写到一半"})
	w.clock.Set(botT0.Add(aibot.StreamLifetime))

	f := w.frame(t, func(f wecomtest.BotFrame) bool { return f.ReqID == reqID && f.Reply.Stream.Finish })
	if want := "<@lisi>\n写到一半\n\n" + botLater; f.Reply.Stream.Content != want {
		t.Fatalf("final frame %q, want %q", f.Reply.Stream.Content, want)
	}
	if end := wait(t, live); end.shown || !errors.Is(end.err, channels.ErrLiveDeadline) {
		t.Fatalf("live reply ended %+v: shown recorded for a stream closed at its deadline", end)
	}
	// The whole reply then goes through aibot_send_msg, mentioning the asker.
	in := w.sink.Accepted()[0]
	if _, err := w.ch.Send(waitCtx(t), channels.Outbound{Account: botName, ReplyTo: in.ReplyTo, Text: "全文", Parts: 1}); err != nil {
		t.Fatal(err)
	}
	sent := w.frame(t, func(f wecomtest.BotFrame) bool { return f.Cmd == "aibot_send_msg" })
	if sent.Reply.ChatID != "wrg" || sent.Reply.Markdown.Content != "<@lisi>\n全文" {
		t.Fatalf("aibot_send_msg = %+v", sent.Reply)
	}
}

func TestBotWS_EnterChatWelcome(t *testing.T) {
	w := startWSBot(t, wsOpts{})
	w.subscribed(t, 1)
	m := msg("ev-9")
	m.CreateTime = botT0.Unix()
	reqID, err := w.srv.PushEvent(waitCtx(t), m.EnterChat())
	if err != nil {
		t.Fatal(err)
	}
	f := w.frame(t, func(f wecomtest.BotFrame) bool { return f.Cmd == "aibot_respond_welcome_msg" })
	if f.ReqID != reqID || f.Reply.MsgType != "text" || f.Reply.Text.Content != botWelcome {
		t.Fatalf("welcome frame = %+v", f)
	}
	if got := w.sink.Accepted(); len(got) != 1 || got[0].MsgType != channels.TypeEvent {
		t.Fatalf("accepted %+v", got)
	}
}

func TestBotWS_DeadSocketReplaced(t *testing.T) {
	w := startWSBot(t, wsOpts{ping: 10 * time.Millisecond})
	subs := w.subscribed(t, 1)
	w.srv.SetPingAcks(false)
	subs = w.subscribed(t, 2)
	w.srv.SetPingAcks(true)
	if subs[0].Conn == subs[1].Conn {
		t.Fatalf("resubscribed on the same connection: %+v", subs)
	}
}

func TestBotWS_TakenOver(t *testing.T) {
	w := startWSBot(t, wsOpts{})
	w.subscribed(t, 1)
	if err := w.srv.Disconnect(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.done:
		w.done <- err // for Cleanup
		if !errors.Is(err, channels.ErrTakenOver) {
			t.Fatalf("Run = %v, want ErrTakenOver", err)
		}
	case <-waitCtx(t).Done():
		t.Fatal("Run did not end on disconnected_event")
	}
	if n := len(w.srv.Subscriptions()); n != 1 {
		t.Fatalf("%d subscriptions, want no reconnect after a takeover", n)
	}
}

func TestBotWS_WrongCredentials(t *testing.T) {
	backoff := []time.Duration{40 * time.Millisecond, 80 * time.Millisecond}
	w := startWSBot(t, wsOpts{secret: "wrong-secret-value", backoff: backoff})
	subs, err := w.srv.WaitSubscriptions(waitCtx(t), 3, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range backoff {
		if gap := subs[i+1].At.Sub(subs[i].At); gap < want || subs[i].OK {
			t.Fatalf("attempt %d: ok=%v, next after %s, want a refusal and a wait of at least %s", i, subs[i].OK, gap, want)
		}
	}
	logs := w.logs.String()
	if strings.Count(logs, "fix bot_id / secret") < 2 || strings.Contains(logs, "wrong-secret-value") {
		t.Fatalf("logs should name the fix and never the secret:\n%s", logs)
	}
}

func TestBotWS_SendWithoutSocket(t *testing.T) {
	w := startWSBot(t, wsOpts{secret: "wrong-secret-value"})
	rt := []byte(`{"mode":"websocket","chat_id":"lisi","chat_type":"single","user_id":"lisi","msg_id":"x","received":1}`)
	_, err := w.ch.Send(waitCtx(t), channels.Outbound{Account: botName, ReplyTo: rt, Text: "hi", Part: 1, Parts: 2})
	if err == nil || errors.Is(err, channels.ErrPermanent) {
		t.Fatalf("Send without a socket = %v, want a retryable error", err)
	}
}

// A second replica subscribing takes the bot over: the first stops
// without fighting back, and messages go to the second.
func TestBotWS_SecondReplicaTakesOver(t *testing.T) {
	a := startWSBot(t, wsOpts{})
	a.subscribed(t, 1)
	b := startWSBot(t, wsOpts{srv: a.srv})
	a.subscribed(t, 2)

	select {
	case err := <-a.done:
		a.done <- err
		if !errors.Is(err, channels.ErrTakenOver) {
			t.Fatalf("first replica's Run = %v, want ErrTakenOver", err)
		}
	case <-waitCtx(t).Done():
		t.Fatalf("the first replica kept its connection; logs:\n%s", a.logs)
	}
	if _, err := a.srv.PushMessage(waitCtx(t), msg("w-2").Text("hi")); err != nil {
		t.Fatal(err)
	}
	if in := nextStarted(t, b.sink); in.MsgID != "w-2" {
		t.Fatalf("second replica accepted %+v", in)
	}
	if n := len(a.srv.Subscriptions()); n != 2 {
		t.Fatalf("%d subscriptions, want 2 (no fight)", n)
	}
}

// A stream WeCom refuses (too many in progress, expired) shows nothing:
// the live reply ends at once, and the first part then goes out at once,
// not after the stream deadline. (So does any first part while no stream
// of its message is live: a follow-up, or a stream that died with a
// previous holder; the delivery layer's hold: gateway/live_test.go.)
func TestBotWS_LostStreamSendsAtOnce(t *testing.T) {
	w := startWSBot(t, wsOpts{})
	w.subscribed(t, 1)
	w.waitLogged(t, "long connection subscribed") // the bot holds the socket
	w.srv.FailNext("aibot_respond_msg", 846605)
	if _, err := w.srv.PushMessage(waitCtx(t), msg("w-lost").Text("hi")); err != nil {
		t.Fatal(err)
	}
	in := nextStarted(t, w.sink)
	if end := wait(t, w.runLive(t, in)); end.shown || end.err == nil || !strings.Contains(end.err.Error(), "846605") {
		t.Fatalf("live reply ended %v %v, want the stream refused", end.shown, end.err)
	}
	if _, err := w.ch.Send(waitCtx(t), channels.Outbound{Account: botName, ReplyTo: in.ReplyTo, Text: "答案", Parts: 1}); err != nil {
		t.Fatalf("Send part 0 of a lost stream = %v, want it sent", err)
	}
	f := w.frame(t, func(f wecomtest.BotFrame) bool { return f.Cmd == "aibot_send_msg" })
	if f.Reply.Markdown.Content != "答案" {
		t.Fatalf("aibot_send_msg = %+v", f.Reply)
	}
}

// A refused subscription is the credentials' fault: the session says so
// (channels.ErrCredentials), and the reconnect loop then waits
// Backoff.Refused instead of hammering WeCom with a wrong secret.
func TestBotWS_RefusedSubscribeIsCredentials(t *testing.T) {
	srv := wecomtest.NewBotWSServer(t, wsBotID, wsSecret)
	bot, err := aibot.New(aibot.Config{
		Name: botName, Mode: aibot.ModeWebSocket, CorpID: botCorpID,
		BotID: wsBotID, Secret: "wrong-secret-value", URL: srv.URL(),
	}, 0, channels.Env{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	aibot.SetBotTiming(bot, time.Hour, 2*time.Second, 5*time.Millisecond)
	conn := wecom.NewChannel().WithBots(bot).Connections()[0]
	err = conn.Run(waitCtx(t), chantest.NewSink().WithReceived(botT0))
	if !errors.Is(err, channels.ErrCredentials) || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("Run = %v, want ErrCredentials without the secret", err)
	}
}
