package wecom_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
	"github.com/silenceper/wechat/v2/cache"
)

const testAccount = "app-test"

// newVectorApp is an app with the official test token and key, whose clock
// stands still at now.
func newVectorApp(t testing.TB, now time.Time) *wecom.App {
	t.Helper()
	app, err := wecom.NewApp(wecom.AppConfig{
		Name:           testAccount,
		CorpID:         wecomtest.VectorCorpID,
		AgentID:        "1",
		Secret:         "unused-secret",
		Token:          wecomtest.VectorToken,
		EncodingAESKey: wecomtest.VectorKey,
	}, cache.NewMemory(), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	return app
}

var callbackNow = time.Unix(1700000000, 0)

// callback encrypts plainXML as WeCom would, timestamped at callbackNow.
func callback(t *testing.T, plainXML string) (q url.Values, body []byte) {
	t.Helper()
	c := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
	return wecomtest.EncryptedCallback(c, plainXML, strconv.FormatInt(callbackNow.Unix(), 10), "nonce123")
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rawFields(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("Raw is not a JSON object: %v: %s", err, raw)
	}
	return m
}

func TestApp_ParseCallback(t *testing.T) {
	app := newVectorApp(t, callbackNow)

	tests := []struct {
		file string
		want channels.Inbound
		raw  map[string]any // a few Raw fields to check
	}{
		{
			file: "text.xml",
			want: channels.Inbound{
				Channel: "wecom", Account: testAccount, MsgID: "1234567890123456", MsgType: "text",
				ChatID: "fromUser", ChatType: channels.ChatSingle,
				Sender:  channels.Identity{UserID: "fromUser", CorpID: wecomtest.VectorCorpID},
				Text:    "this is a test",
				ReplyTo: wecomtest.AppReplyTo("fromUser"),
			},
			raw: map[string]any{"Content": "this is a test", "CreateTime": "1348831860", "AgentID": "1"},
		},
		{
			file: "image.xml",
			want: channels.Inbound{
				Channel: "wecom", Account: testAccount, MsgID: "1234567890123456", MsgType: channels.TypeMedia,
				ChatID: "fromUser", ChatType: channels.ChatSingle,
				Sender:  channels.Identity{UserID: "fromUser", CorpID: wecomtest.VectorCorpID},
				ReplyTo: wecomtest.AppReplyTo("fromUser"),
				Parts:   []channels.Part{{Media: &channels.MediaRef{Kind: channels.MediaImage, Ref: json.RawMessage(`{"media_id":"media_id"}`)}}},
			},
			raw: map[string]any{"PicUrl": "this is a url", "MediaId": "media_id"},
		},
		{
			file: "event_enter_agent.xml",
			want: channels.Inbound{
				Channel: "wecom", Account: testAccount, MsgID: "event:FromUser:1408091189", MsgType: "event",
				ChatID: "FromUser", ChatType: channels.ChatSingle,
				Sender:  channels.Identity{UserID: "FromUser", CorpID: wecomtest.VectorCorpID},
				ReplyTo: wecomtest.AppReplyTo("FromUser"),
			},
			raw: map[string]any{"Event": "enter_agent", "EventKey": ""},
		},
		{
			file: "event_pic_sysphoto.xml",
			want: channels.Inbound{
				Channel: "wecom", Account: testAccount, MsgID: "event:FromUser:1408090816", MsgType: "event",
				ChatID: "FromUser", ChatType: channels.ChatSingle,
				Sender:  channels.Identity{UserID: "FromUser", CorpID: wecomtest.VectorCorpID},
				ReplyTo: wecomtest.AppReplyTo("FromUser"),
			},
			raw: map[string]any{"SendPicsInfo": map[string]any{
				"Count":   "1",
				"PicList": map[string]any{"item": map[string]any{"PicMd5Sum": "1b5f7c23b5bf75682a53e7b6d163e185"}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			q, body := callback(t, readTestdata(t, tt.file))
			got, err := app.ParseCallback(q, body)
			if err != nil {
				t.Fatal(err)
			}
			raw := got.Raw
			got.Raw = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Inbound =\n%+v\nwant\n%+v", got, tt.want)
			}
			fields := rawFields(t, raw)
			for k, v := range tt.raw {
				if !reflect.DeepEqual(fields[k], v) {
					t.Errorf("Raw[%q] = %#v, want %#v", k, fields[k], v)
				}
			}
		})
	}
}

// Content is user text: white space and XML-special characters survive.
func TestApp_ParseCallback_ContentVerbatim(t *testing.T) {
	app := newVectorApp(t, callbackNow)
	content := "  line one\n<b>two</b> & ]]> 三  "
	q, body := callback(t, wecomtest.TextMessageXML(wecomtest.VectorCorpID, "zhangsan", content, "42", "1", callbackNow.Unix()))
	got, err := app.ParseCallback(q, body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != content || got.MsgID != "42" || got.Sender.UserID != "zhangsan" {
		t.Fatalf("got Text %q MsgID %q sender %q", got.Text, got.MsgID, got.Sender.UserID)
	}
}

func TestApp_ParseCallback_Errors(t *testing.T) {
	app := newVectorApp(t, callbackNow)
	text := wecomtest.TextMessageXML(wecomtest.VectorCorpID, "zhangsan", "hi", "42", "1", callbackNow.Unix())
	ts := strconv.FormatInt(callbackNow.Unix(), 10)

	t.Run("ErrSignature", func(t *testing.T) {
		q, body := callback(t, text)
		q["msg_signature"] = []string{wecomtest.MustCrypto(t, "forged", wecomtest.VectorKey, wecomtest.VectorCorpID).Signature(ts, "nonce123", "x")}
		assertErr(t, app, q, body, wxbiz.ErrSignature)
	})
	t.Run("ErrSignature/Missing", func(t *testing.T) {
		q, body := callback(t, text)
		delete(q, "msg_signature")
		assertErr(t, app, q, body, wxbiz.ErrSignature)
	})
	t.Run("ErrSignature/TamperedEncrypt", func(t *testing.T) {
		q, _ := callback(t, text)
		_, other := callback(t, text) // a different ciphertext, not signed by q
		assertErr(t, app, q, other, wxbiz.ErrSignature)
	})
	t.Run("ErrStale", func(t *testing.T) {
		q, body := callback(t, text)
		late := newVectorApp(t, callbackNow.Add(6*time.Minute))
		assertErr(t, late, q, body, wxbiz.ErrStale)
	})
	t.Run("ErrStale/Window", func(t *testing.T) {
		q, body := callback(t, text)
		app, err := wecom.NewApp(wecom.AppConfig{
			Name: testAccount, CorpID: wecomtest.VectorCorpID, AgentID: "1", Secret: "s",
			Token: wecomtest.VectorToken, EncodingAESKey: wecomtest.VectorKey, TimestampWindow: 30 * time.Second,
		}, cache.NewMemory(), func() time.Time { return callbackNow.Add(31 * time.Second) })
		if err != nil {
			t.Fatal(err)
		}
		assertErr(t, app, q, body, wxbiz.ErrStale)
	})
	t.Run("ErrStale/Unparsable", func(t *testing.T) {
		c := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
		q, body := wecomtest.EncryptedCallback(c, text, "yesterday", "n")
		assertErr(t, app, q, body, wxbiz.ErrStale)
	})
	t.Run("ErrDecrypt/WrongReceiveID", func(t *testing.T) {
		other := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, "wwAnotherCorp")
		q, body := wecomtest.EncryptedCallback(other, text, ts, "n")
		assertErr(t, app, q, body, wxbiz.ErrDecrypt)
	})
	t.Run("ErrMalformed/Body", func(t *testing.T) {
		q, _ := callback(t, text)
		assertErr(t, app, q, []byte("{not xml"), wxbiz.ErrMalformed)
	})
	t.Run("ErrMalformed/NoEncrypt", func(t *testing.T) {
		q, _ := callback(t, text)
		assertErr(t, app, q, []byte("<xml><ToUserName>x</ToUserName></xml>"), wxbiz.ErrMalformed)
	})
	for name, plain := range map[string]string{
		"ErrMalformed/NotXML":       "plain text",
		"ErrMalformed/Truncated":    "<xml><FromUserName>zhangsan</FromUserName>",
		"ErrMalformed/NoFrom":       "<xml><MsgType>text</MsgType><MsgId>1</MsgId></xml>",
		"ErrMalformed/NoMsgId":      "<xml><FromUserName>u</FromUserName><MsgType>text</MsgType><Content>x</Content></xml>",
		"ErrMalformed/EventNoTime":  "<xml><FromUserName>u</FromUserName><MsgType>event</MsgType></xml>",
		"ErrMalformed/ImageNoMsgId": "<xml><FromUserName>u</FromUserName><MsgType>image</MsgType></xml>",
	} {
		t.Run(name, func(t *testing.T) {
			q, body := callback(t, plain)
			assertErr(t, app, q, body, wxbiz.ErrMalformed)
		})
	}
}

func assertErr(t *testing.T, app *wecom.App, q url.Values, body []byte, want error) {
	t.Helper()
	in, err := app.ParseCallback(q, body)
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	if in.MsgID != "" || in.Sender.UserID != "" {
		t.Fatalf("a refused callback returned %+v", in)
	}
}

func TestApp_VerifyURL_RoundTrip(t *testing.T) {
	app := newVectorApp(t, callbackNow)
	c := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
	q := wecomtest.VerifyURLQuery(c, "echo-42", strconv.FormatInt(callbackNow.Unix(), 10), "n")
	got, err := app.VerifyURL(q)
	if err != nil || string(got) != "echo-42" {
		t.Fatalf("VerifyURL = %q, %v", got, err)
	}
	bot := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, "")
	q = wecomtest.VerifyURLQuery(bot, "echo-42", strconv.FormatInt(callbackNow.Unix(), 10), "n")
	if _, err := app.VerifyURL(q); !errors.Is(err, wxbiz.ErrDecrypt) {
		t.Fatalf("echostr for another receiveid: err = %v, want ErrDecrypt", err)
	}
}

func TestNewApp_Errors(t *testing.T) {
	good := wecom.AppConfig{
		Name: "ok", CorpID: "ww1", AgentID: "1000002", Secret: "s",
		Token: wecomtest.VectorToken, EncodingAESKey: wecomtest.VectorKey,
	}
	for name, mutate := range map[string]func(*wecom.AppConfig){
		"Name":      func(c *wecom.AppConfig) { c.Name = "a/b" },
		"NameRule":  func(c *wecom.AppConfig) { c.Name = "HR.app" }, // the section's rule: channels.ValidAccountName
		"CorpID":    func(c *wecom.AppConfig) { c.CorpID = "" },
		"AgentID":   func(c *wecom.AppConfig) { c.AgentID = "abc" },
		"Secret":    func(c *wecom.AppConfig) { c.Secret = "" },
		"Token":     func(c *wecom.AppConfig) { c.Token = "" },
		"AESKey":    func(c *wecom.AppConfig) { c.EncodingAESKey = "short" },
		"BaseURL":   func(c *wecom.AppConfig) { c.APIBaseURL = "ftp://x" },
		"NegWindow": func(c *wecom.AppConfig) { c.TimestampWindow = -time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			mutate(&cfg)
			if _, err := wecom.NewApp(cfg, cache.NewMemory(), nil); err == nil {
				t.Fatal("NewApp accepted a bad config")
			}
		})
	}
	if _, err := wecom.NewApp(good, nil, nil); err == nil {
		t.Fatal("NewApp accepted a nil cache")
	}
	app, err := wecom.NewApp(good, cache.NewMemory(), nil)
	if err != nil || app.Name() != "ok" {
		t.Fatalf("good config: %v", err)
	}
}

// Whatever a (validly encrypted) message contains, ParseCallback returns an
// Inbound or an error wrapping wxbiz.ErrMalformed, and never panics.
func FuzzParseCallback(f *testing.F) {
	for _, name := range []string{"text.xml", "image.xml", "event_enter_agent.xml", "event_pic_sysphoto.xml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("<xml><a><b><c><d><e><f><g><h><i><j><k><l><m><n><o><p><q><r>x</r></q></p></o></n></m></l></k></j></i></h></g></f></e></d></c></b></a></xml>")
	c := wecomtest.MustCrypto(f, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
	ts := strconv.FormatInt(callbackNow.Unix(), 10)
	f.Fuzz(func(t *testing.T, plain string) {
		app := newVectorApp(t, callbackNow)
		q, body := wecomtest.EncryptedCallback(c, plain, ts, "n")
		in, err := app.ParseCallback(q, body)
		if err != nil {
			if !errors.Is(err, wxbiz.ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			return
		}
		if in.MsgID == "" || in.Sender.UserID == "" || in.MsgType == "" || !json.Valid(in.Raw) {
			t.Fatalf("accepted an unidentifiable message: %+v", in)
		}
	})
}

func TestApp_VerifyURL_OfficialVector(t *testing.T) {
	app := newVectorApp(t, time.Unix(1409659589, 0))
	q := url.Values{}
	q.Set("msg_signature", wecomtest.VectorSignature)
	q.Set("timestamp", wecomtest.VectorTimestamp)
	q.Set("nonce", wecomtest.VectorNonce)
	q.Set("echostr", wecomtest.VectorEchostr)
	got, err := app.VerifyURL(q)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != wecomtest.VectorEchoPlain {
		t.Fatalf("VerifyURL = %q, want %q (bare, no quotes or newline)", got, wecomtest.VectorEchoPlain)
	}

	t.Run("ErrSignature", func(t *testing.T) {
		bad := cloneValues(q)
		bad.Set("msg_signature", "0"+wecomtest.VectorSignature[1:])
		if _, err := app.VerifyURL(bad); !errors.Is(err, wxbiz.ErrSignature) {
			t.Fatalf("err = %v, want ErrSignature", err)
		}
		bad.Del("msg_signature")
		if _, err := app.VerifyURL(bad); !errors.Is(err, wxbiz.ErrSignature) {
			t.Fatalf("missing signature: err = %v, want ErrSignature", err)
		}
	})
	t.Run("ErrStale", func(t *testing.T) {
		late := newVectorApp(t, time.Unix(1409659589, 0).Add(5*time.Minute+time.Second))
		if _, err := late.VerifyURL(q); !errors.Is(err, wxbiz.ErrStale) {
			t.Fatalf("err = %v, want ErrStale", err)
		}
		early := newVectorApp(t, time.Unix(1409659589, 0).Add(-5*time.Minute-time.Second))
		if _, err := early.VerifyURL(q); !errors.Is(err, wxbiz.ErrStale) {
			t.Fatalf("err = %v, want ErrStale", err)
		}
		edge := newVectorApp(t, time.Unix(1409659589, 0).Add(5*time.Minute))
		if _, err := edge.VerifyURL(q); err != nil {
			t.Fatalf("at the window's edge: %v", err)
		}
	})
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
