package wecom_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// callbackSentinels are the errors ParseCallback may return; anything else
// (or a panic) is a bug.
var callbackSentinels = []error{wxbiz.ErrMalformed, wxbiz.ErrSignature, wxbiz.ErrStale, wxbiz.ErrDecrypt, channels.ErrCorp}

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
	c := wecomtest.MustCrypto(f, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
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
	c := wecomtest.MustCrypto(f, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
	app := newVectorApp(f, callbackNow)
	f.Fuzz(func(t *testing.T, plainXML, timestamp, nonce string) {
		q, body := wecomtest.EncryptedCallback(c, plainXML, timestamp, nonce)
		checkCallback(t, app, q, body)
	})
}

const textXMLSeed = `<xml><ToUserName><![CDATA[` + wecomtest.VectorCorpID + `]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName>` +
	`<CreateTime>1700000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[我还有几天年假？]]></Content>` +
	`<MsgId>7328001</MsgId><AgentID>1</AgentID></xml>`
