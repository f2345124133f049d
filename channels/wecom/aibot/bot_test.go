package aibot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// The AI bot tests speak to the bot as WeCom does: encrypted JSON
// callbacks with receiveid "", and a fake long-connection gateway.

const (
	botName    = "hr-bot"
	botCorpID  = "wwbotcorp"
	botPath    = "/wecom/bot/" + botName + "/callback"
	botWelcome = "你好，我是 HR 助手"
	botThink   = "思考中…"
	botLater   = "（回答较长，稍后发送）"
)

var botMessages = channels.ChannelMessages{Welcome: botWelcome, Thinking: botThink, Later: botLater}

// callbackBot is a callback-mode bot behind its routes.
type callbackBot struct {
	bot    *aibot.Bot
	ch     *wecom.Channel
	mux    *http.ServeMux
	crypto *wxbiz.Crypto
	clock  *chantest.Clock
	sink   *chantest.Sink
	resp   *wecomtest.ResponseURLServer
	logs   *bytes.Buffer
	// refused counts Env.FetchRefused calls (a callback URL the guard
	// refused).
	refused *atomic.Int32
}

var botT0 = time.Unix(1764547200, 0) // 2025-12-01 00:00 UTC

// newCallbackBot builds the bot; opts change its section first.
func newCallbackBot(t *testing.T, opts ...func(*aibot.Config)) *callbackBot {
	t.Helper()
	clock := chantest.NewClock(botT0)
	logs := &bytes.Buffer{}
	section := aibot.Config{
		Name: botName, Mode: aibot.ModeCallback, CorpID: botCorpID,
		Token: wecomtest.VectorToken, EncodingAESKey: wecomtest.VectorKey,
		// The fakes (response_url, media) listen on 127.0.0.1.
		FetchHosts: []string{"127.0.0.1"}, FetchAllowPrivate: true,
	}
	for _, o := range opts {
		o(&section)
	}
	refused := &atomic.Int32{}
	bot, err := aibot.New(section, 0, channels.Env{Now: clock.Now, Logger: slog.New(slog.NewTextHandler(logs, nil)), Messages: botMessages,
		FetchRefused: func(channel, account string) {
			if channel == wecom.ChannelName && account == botName {
				refused.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	f := &callbackBot{
		bot: bot, ch: wecom.NewChannel().WithBots(bot), mux: http.NewServeMux(),
		crypto: wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, ""), clock: clock,
		sink: chantest.NewSink().WithReceived(botT0), resp: wecomtest.NewResponseURLServer(t), logs: logs,
		refused: refused,
	}
	for _, r := range f.ch.Routes(f.sink) {
		f.mux.HandleFunc(r.Method+" "+r.Path, r.Handler)
	}
	return f
}

// post delivers plain as an encrypted callback and returns the answer.
func (f *callbackBot) post(t *testing.T, plain []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := wecomtest.BotCallbackRequest(f.crypto, botPath, plain, f.clock.Now())
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, req)
	return rec
}

// reply posts plain and decrypts the passive reply.
func (f *callbackBot) reply(t *testing.T, plain []byte) wecomtest.BotReply {
	t.Helper()
	rec := f.post(t, plain)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	nonce := "nonce-" + strconv.FormatInt(f.clock.Now().Unix(), 10)
	r, err := wecomtest.OpenBotReply(f.crypto, rec.Body.Bytes(), nonce)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *callbackBot) single(msgID string) wecomtest.BotMessage {
	return wecomtest.BotMessage{MsgID: msgID, AIBotID: "aib-1", ChatType: "single", UserID: "zhangsan",
		ResponseURL: f.resp.URL(msgID)}
}

func (f *callbackBot) group(msgID string) wecomtest.BotMessage {
	m := f.single(msgID)
	m.ChatType, m.ChatID = "group", "wrgroup1"
	return m
}

func TestBot_VerifyURL(t *testing.T) {
	f := newCallbackBot(t)
	ts := strconv.FormatInt(botT0.Unix(), 10)

	t.Run("OK", func(t *testing.T) {
		q := wecomtest.VerifyURLQuery(f.crypto, "8830612946478469211", ts, "n1")
		rec := httptest.NewRecorder()
		f.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, botPath+"?"+q.Encode(), nil))
		if rec.Code != http.StatusOK || rec.Body.String() != "8830612946478469211" {
			t.Fatalf("got %d %q, want 200 and the bare plaintext", rec.Code, rec.Body)
		}
	})
	t.Run("ErrDecrypt", func(t *testing.T) {
		// Encrypted for an app (receiveid = corp id): not this bot's.
		q := wecomtest.VerifyURLQuery(wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID), "123", ts, "n1")
		rec := httptest.NewRecorder()
		f.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, botPath+"?"+q.Encode(), nil))
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("status %d, want 400", rec.Code)
		}
	})
}

func TestBot_Callback_Refused(t *testing.T) {
	f := newCallbackBot(t)
	plain := f.single("m-forged").Text("hello")

	t.Run("ErrSignature", func(t *testing.T) {
		req := wecomtest.BotCallbackRequest(f.crypto, botPath, plain, botT0)
		q := req.URL.Query()
		q.Set("msg_signature", strings.Repeat("0", 40))
		req.URL.RawQuery = q.Encode()
		rec := httptest.NewRecorder()
		f.mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", rec.Code)
		}
	})
	t.Run("ErrStale", func(t *testing.T) {
		req := wecomtest.BotCallbackRequest(f.crypto, botPath, plain, botT0.Add(-time.Hour))
		rec := httptest.NewRecorder()
		f.mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", rec.Code)
		}
	})
	if got := f.sink.Accepted(); len(got) != 0 {
		t.Fatalf("accepted %d messages from refused callbacks", len(got))
	}
	refused := strings.Join(f.sink.Refusals(), " ")
	if want := botName + "/signature " + botName + "/timestamp"; refused != want {
		t.Fatalf("refusals recorded %q, want %q", refused, want)
	}
	t.Run("ErrUnavailable", func(t *testing.T) {
		f.sink.FailWith(errors.New("postgres down"))
		defer f.sink.FailWith(nil)
		if rec := f.post(t, plain); rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503 so that WeCom retries", rec.Code)
		}
	})
}

func TestBot_Callback_TextOpensStream(t *testing.T) {
	f := newCallbackBot(t)
	r := f.reply(t, f.single("m-1").Text("请假怎么申请？"))

	if r.MsgType != "stream" || r.Stream.ID != "m-1" || r.Stream.Finish || r.Stream.Content != botThink {
		t.Fatalf("passive reply = %+v, want an open stream m-1 saying %q", r, botThink)
	}
	got := f.sink.Accepted()
	if len(got) != 1 {
		t.Fatalf("accepted %d, want 1", len(got))
	}
	in := got[0]
	if in.Channel != "wecom" || in.Account != botName || in.MsgID != "m-1" || in.MsgType != "text" ||
		in.ChatType != channels.ChatSingle || in.ChatID != "zhangsan" || in.Text != "请假怎么申请？" || in.Mentioned ||
		in.Sender.UserID != "zhangsan" || in.Sender.CorpID != botCorpID {
		t.Fatalf("Inbound = %+v", in)
	}
	if !strings.Contains(string(in.Raw), `"response_url"`) {
		t.Errorf("Raw lacks the decrypted payload: %s", in.Raw)
	}
}

func TestBot_Callback_MessageTypes(t *testing.T) {
	f := newCallbackBot(t)
	img := func(u string) string { return `{"kind":"image","ref":{"url":"` + u + `"}}` }
	tests := []struct {
		name      string
		plain     []byte
		wantType  string
		wantText  string
		wantParts string // the Parts as JSON, Expires left out
	}{
		{"voice", f.single("m-voice").Voice("明天请假"), "text", "明天请假", "null"},
		{"mixed", f.single("m-mixed").Mixed(wecomtest.MixedText("看这张图"), wecomtest.MixedImage("https://x/1"), wecomtest.MixedText("报错了")),
			"media", "看这张图\n报错了", `[{"text":"看这张图"},{"media":` + img("https://x/1") + `},{"text":"报错了"}]`},
		{"mixed text only", f.single("m-mixed2").Mixed(wecomtest.MixedText("只有字")), "text", "只有字", "null"},
		{"image", f.single("m-image").Image("https://x/2"), "media", "", `[{"media":` + img("https://x/2") + `}]`},
		{"file", f.single("m-file").File("https://x/3"), "media", "", `[{"media":{"kind":"file","ref":{"url":"https://x/3"}}}]`},
		{"image without url", f.single("m-image2").Image(""), "text", "", "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.post(t, tt.plain)
			got := f.sink.Accepted()
			in := got[len(got)-1]
			for _, p := range in.Parts {
				if p.Media != nil {
					if want := botT0.Add(aibot.BotMediaLifetime); !p.Media.Expires.Equal(want) {
						t.Errorf("media expires %s, want %s", p.Media.Expires, want)
					}
					p.Media.Expires = time.Time{}
				}
			}
			parts, _ := json.Marshal(in.Parts)
			if in.MsgType != tt.wantType || in.Text != tt.wantText || string(parts) != tt.wantParts {
				t.Fatalf("MsgType %q Text %q Parts %s, want %q %q %s", in.MsgType, in.Text, parts, tt.wantType, tt.wantText, tt.wantParts)
			}
		})
	}
}

func TestBot_Callback_EnterChatWelcome(t *testing.T) {
	f := newCallbackBot(t)
	m := f.single("ev-1")
	m.ResponseURL, m.CreateTime = "", botT0.Unix()
	r := f.reply(t, m.EnterChat())
	if r.MsgType != "text" || r.Text.Content != botWelcome {
		t.Fatalf("reply = %+v, want the welcome text", r)
	}
	got := f.sink.Accepted()
	if len(got) != 1 || got[0].MsgType != channels.TypeEvent || got[0].MsgID != "ev-1" {
		t.Fatalf("accepted %+v, want the event recorded", got)
	}
}

func TestBot_Callback_StreamRefresh(t *testing.T) {
	f := newCallbackBot(t)
	f.reply(t, f.single("m-1").Text("hi"))
	refresh := f.single("r-1").StreamRefresh("m-1")

	f.sink.SetProgress("m-1", channels.Progress{Known: true, Text: "正在查询假期余额"})
	r := f.reply(t, refresh)
	if r.Stream.ID != "m-1" || r.Stream.Finish || r.Stream.Content != "正在查询假期余额" {
		t.Fatalf("refresh = %+v, want the draft, unfinished", r.Stream)
	}
	if len(f.sink.ShownRefs()) != 0 {
		t.Fatal("Shown recorded for a draft")
	}

	f.sink.SetProgress("m-1", channels.Progress{Known: true, Text: "你还有 5 天年假。", Done: true})
	r = f.reply(t, refresh)
	if !r.Stream.Finish || r.Stream.Content != "你还有 5 天年假。" {
		t.Fatalf("refresh = %+v, want the final text, finished", r.Stream)
	}
	if got := f.sink.ShownRefs(); len(got) != 1 || got[0] != (channels.MessageRef{Channel: "wecom", Account: botName, MsgID: "m-1"}) {
		t.Fatalf("Shown = %+v", got)
	}
}

func TestBot_Callback_StreamDeadline(t *testing.T) {
	f := newCallbackBot(t)
	f.reply(t, f.single("m-1").Text("hi"))
	f.sink.SetProgress("m-1", channels.Progress{Known: true, Text: "draft"})

	// Past 6 minutes minus the safety margin: finish now, with the note.
	late := botT0.Add(aibot.StreamLifetime - time.Second)
	f.clock.Set(late)
	r := f.reply(t, f.single("r-9").StreamRefresh("m-1"))
	if !r.Stream.Finish || r.Stream.Content != "draft\n\n"+botLater {
		t.Fatalf("refresh at the deadline = %+v, want finish with the note", r.Stream)
	}
	if len(f.sink.ShownRefs()) != 0 {
		t.Fatal("Shown recorded for a stream closed at its deadline")
	}

	// The final reply then goes through response_url.
	rt := f.sink.Accepted()[0].ReplyTo
	if _, err := f.ch.Send(context.Background(), channels.Outbound{Account: botName, ReplyTo: rt,
		Format: channels.FormatMarkdown, Text: "**5** 天", Part: 0, Parts: 1}); err != nil {
		t.Fatal(err)
	}
	posts := f.resp.Posts()
	if len(posts) != 1 || posts[0].Code != "m-1" || posts[0].Reply.MsgType != "markdown" || posts[0].Reply.Markdown.Content != "**5** 天" {
		t.Fatalf("response_url POSTs = %+v", posts)
	}
}

// The first part of an answer waits for the stream WeCom polls: the
// delivery layer holds it back for Limits.LiveDeadline (gateway/live_test.go
// shows the hold), until after the stream deadline; the bot pushes no
// live reply itself in callback mode.
func TestBot_Send_Deferred(t *testing.T) {
	f := newCallbackBot(t)
	f.reply(t, f.single("m-1").Text("hi"))
	rt := f.sink.Accepted()[0].ReplyTo
	f.clock.Set(botT0.Add(time.Minute))

	l := f.ch.Limits(botName)
	if until := botT0.Add(l.LiveDeadline); until.Before(botT0.Add(5*time.Minute)) || until.After(botT0.Add(aibot.StreamLifetime+time.Minute)) ||
		!l.LiveCloseBy(botT0).Before(until) {
		t.Fatalf("held until %s (the stream closing %s), want after the stream deadline", until, l.LiveCloseBy(botT0))
	}
	if l.LiveInterval != 0 {
		t.Fatalf("LiveInterval = %s: a callback-mode bot pushes no live reply", l.LiveInterval)
	}

	// Later parts go at once.
	if _, err := f.ch.Send(context.Background(), channels.Outbound{Account: botName, ReplyTo: rt, Text: "second", Part: 1, Parts: 2}); err != nil {
		t.Fatal(err)
	}
	if posts := f.resp.Posts(); len(posts) != 1 || posts[0].Reply.Markdown.Content != "second" {
		t.Fatalf("posts = %+v", posts)
	}
}

func TestBot_Send_ResponseURLErrors(t *testing.T) {
	f := newCallbackBot(t)
	send := func(msgID string, now time.Time) error {
		t.Helper()
		f.clock.Set(botT0)
		f.reply(t, f.single(msgID).Text("hi"))
		got := f.sink.Accepted()
		f.clock.Set(now)
		_, err := f.ch.Send(context.Background(), channels.Outbound{Account: botName, ReplyTo: got[len(got)-1].ReplyTo, Text: "x", Part: 1, Parts: 2})
		return err
	}
	t.Run("ErrExpired", func(t *testing.T) {
		if err := send("m-old", botT0.Add(aibot.ResponseURLLifetime)); !errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("err = %v, want ErrPermanent", err)
		}
		if len(f.resp.Posts()) != 0 {
			t.Fatal("posted to an expired response_url")
		}
	})
	t.Run("ErrUsed", func(t *testing.T) {
		if err := send("m-once", botT0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		rt := f.sink.Accepted()[len(f.sink.Accepted())-1].ReplyTo
		_, err := f.ch.Send(context.Background(), channels.Outbound{Account: botName, ReplyTo: rt, Text: "y", Part: 2, Parts: 3})
		if !errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("second POST: err = %v, want ErrPermanent", err)
		}
	})
	t.Run("Transient", func(t *testing.T) {
		f.resp.FailNext(-1)
		err := send("m-busy", botT0.Add(time.Minute))
		if err == nil || errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("err = %v, want a retryable error", err)
		}
	})
}

func TestBot_Callback_GroupMention(t *testing.T) {
	f := newCallbackBot(t)
	r := f.reply(t, f.group("m-g").Text("@HR助手\u2005请假怎么申请"))
	in := f.sink.Accepted()[0]
	if !in.Mentioned || in.Text != "请假怎么申请" || in.ChatType != channels.ChatGroup || in.ChatID != "wrgroup1" || in.Sender.UserID != "zhangsan" {
		t.Fatalf("Inbound = %+v", in)
	}
	if want := "<@zhangsan>\n" + botThink; r.Stream.Content != want {
		t.Fatalf("stream opens with %q, want %q", r.Stream.Content, want)
	}
	f.sink.SetProgress("m-g", channels.Progress{Known: true, Text: "答案", Done: true})
	g := f.group("r-g")
	if r := f.reply(t, g.StreamRefresh("m-g")); r.Stream.Content != "<@zhangsan>\n答案" {
		t.Fatalf("stream content %q, want the asker mentioned", r.Stream.Content)
	}
	if _, err := f.ch.Send(context.Background(), channels.Outbound{Account: botName, ReplyTo: in.ReplyTo, Text: "续", Part: 1, Parts: 2}); err != nil {
		t.Fatal(err)
	}
	if posts := f.resp.Posts(); len(posts) != 1 || posts[0].Reply.Markdown.Content != "<@zhangsan>\n续" {
		t.Fatalf("posts = %+v, want the asker mentioned", posts)
	}
}

func TestBot_Limits(t *testing.T) {
	f := newCallbackBot(t)
	l := f.ch.Limits(botName)
	if l.Format != channels.FormatMarkdown || l.Dialect != channels.DialectBasic || l.PerMinute != aibot.BotPushPerMinute || !l.Streams ||
		l.MaxBytes > aibot.MaxStreamBytes || l.MaxBytes < aibot.MaxStreamBytes-100 {
		t.Fatalf("Limits = %+v", l)
	}
}

// A later message to the conversation (an async result) is no answer to
// the message: it goes out at once, never held for the message's stream.
func TestBot_Send_FollowUpNotDeferred(t *testing.T) {
	f := newCallbackBot(t)
	f.reply(t, f.single("m-2").Text("hi"))
	rt := f.sink.Accepted()[0].ReplyTo
	f.clock.Set(botT0.Add(time.Minute))
	if _, err := f.ch.Send(context.Background(), channels.Outbound{Account: botName, ReplyTo: rt, Text: "结果", Parts: 1}); err != nil {
		t.Fatalf("Send of a follow-up = %v, want it sent", err)
	}
	if len(f.resp.Posts()) != 1 {
		t.Fatalf("response_url posts = %d, want 1", len(f.resp.Posts()))
	}
}
