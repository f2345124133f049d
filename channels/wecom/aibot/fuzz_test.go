package aibot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// checkBotInbound holds what the sink may be given from any AI bot input
// of n bytes: the message of this bot, identified, its sender a WeCom
// UserID, and nothing larger than what came in.
func checkBotInbound(t *testing.T, in channels.Inbound, n int) {
	t.Helper()
	switch {
	case in.Channel != wecom.ChannelName || in.Account != botName || in.Sender.CorpID != botCorpID:
		t.Fatalf("not this bot's: %+v", in)
	case in.MsgID == "" || in.MsgType == "" || in.ChatID == "" || in.Sender.UserID == "":
		t.Fatalf("accepted an unidentified message: %+v", in)
	case in.ChatType != channels.ChatSingle && in.ChatType != channels.ChatGroup:
		t.Fatalf("chat type %q", in.ChatType)
	case len(in.Sender.UserID) > 64:
		t.Fatalf("a UserID of %d bytes (WeCom's are at most 64)", len(in.Sender.UserID))
	case len(in.Text) > n || len(in.MsgID) > n+64 || len(in.ReplyTo) > 6*n+1024: // JSON writes "<" as \u003c
		t.Fatalf("%d bytes in gave text %d, msgid %d, reply address %d", n, len(in.Text), len(in.MsgID), len(in.ReplyTo))
	case !json.Valid(in.Raw) || !json.Valid(in.ReplyTo):
		t.Fatalf("Raw or ReplyTo not JSON: %s / %s", in.Raw, in.ReplyTo)
	}
}

// botSeeds are decrypted AI bot messages as WeCom sends them (callback
// bodies and long-connection frame bodies alike), and near misses.
func botSeeds() [][]byte {
	single := wecomtest.BotMessage{MsgID: "m-1", AIBotID: "aib", ChatType: "single", UserID: "zhangsan"}
	group := wecomtest.BotMessage{MsgID: "m-2", AIBotID: "aib", ChatType: "group", ChatID: "wrg", UserID: "lisi"}
	anon := wecomtest.BotMessage{MsgID: "ev-1", AIBotID: "aib", CreateTime: 1700000000}
	return [][]byte{
		single.Text("请假怎么申请？"),
		group.Text("@王五\u2005@HR助手\u2005帮他查一下"),
		group.Text("@"),
		single.Voice("语音转写"),
		group.Mixed(wecomtest.MixedText("@HR助手 看图"), wecomtest.MixedImage("https://x/1"), wecomtest.MixedImage("")),
		single.Image("https://x/1"),
		single.StreamRefresh("m-1"),
		single.EnterChat(),
		anon.Event("feedback_event"),
		wecomtest.DisconnectedEvent("ev-2", "aib", 1700000000),
		[]byte(`{"msgtype":"event","event":{}}`),
		[]byte(`{"msgtype":"event","event":{"eventtype":"enter_chat"},"from":{"userid":"u"},"chattype":"group"}`),
		[]byte(`{"msgtype":"text","msgid":"x","from":{"userid":"` + strings.Repeat("u", 65) + `"}}`),
		[]byte(`{"msgtype":"mixed","msgid":"x","from":{"userid":"u"},"mixed":{"msg_item":[{"msgtype":"text"},null,{}]}}`),
		[]byte(`null`), []byte(`[]`), []byte(`{"msgtype":5}`), []byte(``),
	}
}

// newFuzzBot is a fresh bot (nothing learned from an earlier input).
func newFuzzBot(t testing.TB, mode, name string) *aibot.Bot {
	b, err := aibot.New(aibot.Config{
		Name: botName, Mode: mode, CorpID: botCorpID, Token: wecomtest.VectorToken, EncodingAESKey: wecomtest.VectorKey,
		BotID: wsBotID, Secret: wsSecret, BotName: name,
	}, 0, channels.Env{Now: func() time.Time { return botT0 }, Logger: slog.New(slog.DiscardHandler), Messages: botMessages})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzBotFrame fuzzes a frame on the AI bot's long connection, as WeCom's
// gateway (or whoever answers at its address) could send it: the frame,
// the takeover check, the message and the Inbound built from it.
func FuzzBotFrame(f *testing.F) {
	for _, body := range botSeeds() {
		for _, cmd := range []string{"aibot_msg_callback", "aibot_event_callback"} {
			frame, _ := json.Marshal(map[string]any{"cmd": cmd, "headers": map[string]string{"req_id": "r-1"}, "body": json.RawMessage(body)})
			if json.Valid(body) {
				f.Add(frame, "")
			}
		}
	}
	f.Add([]byte(`{"headers":{"req_id":"r-1"},"errcode":0,"errmsg":"ok"}`), "")
	f.Add([]byte(`{"cmd":"aibot_event_callback","body":{"event":{"eventtype":"disconnected_event"}}}`), "")
	f.Add([]byte(`{"cmd":"aibot_event_callback","body":{"event":"disconnected_event"}}`), "")
	f.Add([]byte(`{"cmd":"ping","body":"x"}`), "HR助手")
	f.Add([]byte(`{"cmd":`), "")
	f.Fuzz(func(t *testing.T, frame []byte, botName string) {
		in, handled, err := aibot.DecodeBotFrame(newFuzzBot(t, aibot.ModeWebSocket, botName), frame)
		again, handled2, err2 := aibot.DecodeBotFrame(newFuzzBot(t, aibot.ModeWebSocket, botName), frame)
		if handled != handled2 || (err == nil) != (err2 == nil) || !reflect.DeepEqual(in, again) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		switch {
		case errors.Is(err, channels.ErrTakenOver) || errors.Is(err, wxbiz.ErrMalformed):
			if handled {
				t.Fatalf("handled a frame that failed: %v", err)
			}
		case err != nil:
			t.Fatalf("error wraps no sentinel: %v", err)
		case handled:
			checkBotInbound(t, in, len(frame))
		}
	})
}

// fuzzSink takes what a callback-mode bot hands over, keeping only the
// last message: fuzzing must not grow memory.
type fuzzSink struct {
	last     *channels.Inbound
	progress channels.Progress
}

func (s *fuzzSink) Accept(_ context.Context, in channels.Inbound) (channels.Receipt, error) {
	s.last = &in
	return channels.Receipt{New: true, Answer: in.MsgType != channels.TypeEvent}, nil
}

func (s *fuzzSink) Progress(context.Context, channels.MessageRef) (channels.Progress, error) {
	return s.progress, nil
}

func (s *fuzzSink) Shown(context.Context, channels.MessageRef) error { return nil }

func (s *fuzzSink) Refused(context.Context, string, string, string) {}

// FuzzBotCallback fuzzes the decrypted message of a callback-mode AI bot
// (and the bot's name, which decides what mention is stripped): each input
// is encrypted and signed as WeCom would and POSTed to the bot's route, so
// the decoder runs on every input. The answer is 200 (a valid passive
// reply, or none) or a refusal, never a 5xx or a panic.
func FuzzBotCallback(f *testing.F) {
	for _, plain := range botSeeds() {
		f.Add(plain, "HR助手", true)
	}
	f.Add([]byte(`{"msgtype":"text","msgid":"x","chattype":"group","chatid":"g","from":{"userid":"u"},"text":{"content":"@ @@ @a\u2005@"}}`), "@", false)
	f.Add([]byte(`{"msgtype":"text","msgid":"x","chattype":"group","chatid":"g","from":{"userid":"u"},"text":{"content":"@a b @a b"}}`), "a b", false)
	c := wecomtest.MustCrypto(f, wecomtest.VectorToken, wecomtest.VectorKey, "")
	ts := strconv.FormatInt(botT0.Unix(), 10)
	f.Fuzz(func(t *testing.T, plain []byte, botName string, done bool) {
		sink := &fuzzSink{progress: channels.Progress{Known: true, Done: done, Text: "答案"}}
		mux := http.NewServeMux()
		for _, r := range wecom.NewChannel().WithBots(newFuzzBot(t, aibot.ModeCallback, botName)).Routes(sink) {
			mux.HandleFunc(r.Method+" "+r.Path, r.Handler)
		}
		q, body := wecomtest.BotCallback(c, plain, ts, "nonce-1")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, botPath+"?"+q.Encode(), bytes.NewReader(body)))
		switch rec.Code {
		case http.StatusOK:
			if rec.Body.Len() > 0 {
				r, err := wecomtest.OpenBotReply(c, rec.Body.Bytes(), "nonce-1")
				if err != nil || (r.MsgType != "stream" && r.MsgType != "text") || len(r.Stream.Content) > aibot.MaxStreamBytes {
					t.Fatalf("passive reply %+v: %v", r, err)
				}
			}
		case http.StatusBadRequest:
			if sink.last != nil {
				t.Fatalf("refused (%s) after handing over %+v", rec.Body, *sink.last)
			}
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		if sink.last != nil {
			checkBotInbound(t, *sink.last, len(plain))
		}
	})
}
