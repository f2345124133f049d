package wecom_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

// callbackSentinels are the errors ParseCallback may return; anything else
// (or a panic) is a bug.
var callbackSentinels = []error{wecom.ErrMalformed, wecom.ErrSignature, wecom.ErrStale, wecom.ErrDecrypt}

// checkCallback holds ParseCallback's contract for any input: a sentinel
// error, or an Inbound of this app with its identifying fields and a JSON
// Raw; and the same answer for the same input.
func checkCallback(t *testing.T, app *wecom.App, q url.Values, body []byte) {
	in, err := app.ParseCallback(q, body)
	again, err2 := app.ParseCallback(q, body)
	if (err == nil) != (err2 == nil) || !reflect.DeepEqual(in, again) {
		t.Fatalf("not deterministic: %v / %v", err, err2)
	}
	if err != nil {
		for _, s := range callbackSentinels {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("error wraps no sentinel: %v", err)
	}
	if in.Channel != wecom.ChannelName || in.Account != testAccount || in.MsgType == "" || in.Sender.UserID == "" ||
		in.MsgID == "" || !json.Valid(in.Raw) {
		t.Fatalf("accepted an incomplete message: %+v", in)
	}
}

// FuzzCallbackEnvelopeAndQuery fuzzes the whole POST callback as it reaches the
// gateway: the raw query string (msg_signature, timestamp, nonce) and the
// envelope body. `go test` runs the seeds.
func FuzzCallbackEnvelopeAndQuery(f *testing.F) {
	c := mustCrypto(f, vecToken, vecKey, vecCorpID)
	ts := strconv.FormatInt(callbackNow.Unix(), 10)
	for _, plain := range []string{textXMLSeed, `<xml><MsgType>event</MsgType></xml>`, "", "not xml"} {
		q, body := wecomtest.EncryptedCallback(c, plain, ts, "nonce123")
		f.Add(q.Encode(), body)
	}
	q, body := wecomtest.EncryptedCallback(c, textXMLSeed, ts, "nonce123")
	q.Set("timestamp", "1") // signed over another time
	f.Add(q.Encode(), body)
	f.Add("msg_signature=&timestamp=&nonce=", []byte("<xml><Encrypt></Encrypt></xml>"))
	f.Add("%zz&timestamp=9999999999999999999", []byte("<xml><Encrypt><![CDATA[AAAA]]></Encrypt><Encrypt>x</Encrypt></xml>"))
	f.Add("", []byte(`<!DOCTYPE x [<!ENTITY a "aaaa">]><xml><Encrypt>&a;</Encrypt></xml>`))
	app := newVectorApp(f, callbackNow)
	f.Fuzz(func(t *testing.T, rawQuery string, body []byte) {
		q, _ := url.ParseQuery(rawQuery) // what parsed, as net/http would hand it over
		checkCallback(t, app, q, body)
	})
}

// FuzzCallbackSigned reaches past the signature with a fuzzed query: the
// timestamp and nonce (and the message) are fuzzed, and the envelope is
// encrypted and signed over them as WeCom would, so the timestamp window
// and the rest run on every input. (FuzzParseCallback fuzzes the message
// alone.)
func FuzzCallbackSigned(f *testing.F) {
	ts := strconv.FormatInt(callbackNow.Unix(), 10)
	f.Add(textXMLSeed, ts, "nonce123")
	f.Add(`<xml><ToUserName>x</ToUserName><FromUserName></FromUserName><MsgType>text</MsgType><MsgId>1</MsgId></xml>`, ts, "")
	f.Add(`<xml><MsgType>event</MsgType><Event>enter_agent</Event><FromUserName>u</FromUserName><CreateTime>1</CreateTime></xml>`, "0", "n")
	f.Add(`<xml><a><b><c><d>deep</d></c></b></a></xml>`, "-1", "n")
	c := mustCrypto(f, vecToken, vecKey, vecCorpID)
	app := newVectorApp(f, callbackNow)
	f.Fuzz(func(t *testing.T, plainXML, timestamp, nonce string) {
		q, body := wecomtest.EncryptedCallback(c, plainXML, timestamp, nonce)
		checkCallback(t, app, q, body)
	})
}

const textXMLSeed = `<xml><ToUserName><![CDATA[` + vecCorpID + `]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName>` +
	`<CreateTime>1700000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[我还有几天年假？]]></Content>` +
	`<MsgId>7328001</MsgId><AgentID>1</AgentID></xml>`

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
func newFuzzBot(t testing.TB, mode, name string) *wecom.Bot {
	b, err := wecom.NewBot(wecom.BotSection{
		Name: botName, Mode: mode, CorpID: botCorpID, Token: vecToken, EncodingAESKey: vecKey,
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
		in, handled, err := wecom.DecodeBotFrame(newFuzzBot(t, wecom.BotModeWebSocket, botName), frame)
		again, handled2, err2 := wecom.DecodeBotFrame(newFuzzBot(t, wecom.BotModeWebSocket, botName), frame)
		if handled != handled2 || (err == nil) != (err2 == nil) || !reflect.DeepEqual(in, again) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		switch {
		case errors.Is(err, channels.ErrTakenOver) || errors.Is(err, wecom.ErrMalformed):
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
	c := mustCrypto(f, vecToken, vecKey, "")
	ts := strconv.FormatInt(botT0.Unix(), 10)
	f.Fuzz(func(t *testing.T, plain []byte, botName string, done bool) {
		sink := &fuzzSink{progress: channels.Progress{Known: true, Done: done, Text: "答案"}}
		mux := http.NewServeMux()
		for _, r := range wecom.NewChannel().WithBots(newFuzzBot(t, wecom.BotModeCallback, botName)).Routes(sink) {
			mux.HandleFunc(r.Method+" "+r.Path, r.Handler)
		}
		q, body := wecomtest.BotCallback(c, plain, ts, "nonce-1")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, botPath+"?"+q.Encode(), bytes.NewReader(body)))
		switch rec.Code {
		case http.StatusOK:
			if rec.Body.Len() > 0 {
				r, err := wecomtest.OpenBotReply(c, rec.Body.Bytes(), "nonce-1")
				if err != nil || (r.MsgType != "stream" && r.MsgType != "text") || len(r.Stream.Content) > wecom.MaxStreamBytes {
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
