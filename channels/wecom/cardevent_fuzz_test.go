package wecom

import (
	"encoding/xml"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/silenceper/wechat/v2/cache"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// FuzzTemplateCardEvent decodes any decrypted callback (what a click's
// callback holds once its signature and receiveid are checked) and answers
// a click. No panic; a click taken is sane: the clicker is the verified
// FromUserName, the card id and action are within their bounds and the
// event's TaskId is the card's; a refusal wraps a sentinel; the passive
// reply to it is XML that decrypts to an update_button for the clicker.
func FuzzTemplateCardEvent(f *testing.F) {
	a, err := NewApp(AppConfig{Name: "app-fuzz", CorpID: "wwfuzz", AgentID: "1000002", Secret: "fuzz-secret",
		Token: "QDG6eK", EncodingAESKey: "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C", Cards: true},
		cache.NewMemory(), func() time.Time { return time.Unix(1700000000, 0) })
	if err != nil {
		f.Fatal(err)
	}
	event := func(from, key, task, agent string) []byte {
		return []byte("<xml><ToUserName><![CDATA[wwfuzz]]></ToUserName><FromUserName><![CDATA[" + from + "]]></FromUserName>" +
			"<CreateTime>1700000000</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[template_card_event]]></Event>" +
			"<EventKey><![CDATA[" + key + "]]></EventKey><TaskId><![CDATA[" + task + "]]></TaskId>" +
			"<CardType><![CDATA[button_interaction]]></CardType><ResponseCode><![CDATA[rc]]></ResponseCode><AgentID>" + agent + "</AgentID></xml>")
	}
	f.Add(event("zhangsan", "0123456789abcdef:ok", "h_0123456789abcdef", "1000002"))
	f.Add(event("zhangsan", "0123456789abcdef:2", "h_0123456789abcdef", "1000002"))
	f.Add(event("lisi", "0123456789abcdef:ok", "h_other", "1000002"))
	f.Add(event("zhangsan", "0123456789abcdef:ok", "h_0123456789abcdef", "1000003"))
	f.Add(event("zhangsan", ":ok", "h_", ""))
	f.Add(event("a]]>b", "x:y:z", "h_x", "1000002"))
	f.Add([]byte(`<xml><MsgType>event</MsgType><Event>template_card_event</Event></xml>`))
	f.Fuzz(func(t *testing.T, plain []byte) {
		in, err := a.decodeMessage(plain)
		if err != nil {
			if !errors.Is(err, wxbiz.ErrMalformed) && !errors.Is(err, channels.ErrCorp) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if in.MsgType != channels.TypeClick {
			if in.Click != nil {
				t.Fatalf("a %s carries a click: %+v", in.MsgType, in.Click)
			}
			return
		}
		f := mustFields(t, plain)
		c := in.Click
		if c == nil || c.By == "" || c.By != in.Sender.UserID || c.By != f.get("FromUserName") ||
			!channels.ValidClick(c.Card, c.Action) ||
			f.get("TaskId") != taskIDPrefix+c.Card || f.get("AgentID") != a.agentID || in.MsgID == "" {
			t.Fatalf("accepted click not sane: %+v %+v", in, c)
		}
		ans := &channels.CardAnswer{Outcome: channels.CardClaimed, Card: &channels.Card{ID: c.Card, Title: c.Action + string(plain)}}
		body, err := a.cardReply(in, ans, "nonce-"+strconv.Itoa(len(plain)))
		if err != nil {
			if !utf8.Valid(plain) {
				return // a title that is not UTF-8 cannot be XML
			}
			t.Fatalf("reply: %v", err)
		}
		var env struct {
			Encrypt string `xml:"Encrypt"`
		}
		if err := xml.Unmarshal(body, &env); err != nil {
			t.Fatalf("reply not XML: %v: %q", err, body)
		}
		reply, err := a.crypto.Decrypt(env.Encrypt)
		if err != nil || !strings.Contains(string(reply), "<MsgType><![CDATA[update_button]]></MsgType>") {
			t.Fatalf("reply %q: %v", reply, err)
		}
	})
}

func mustFields(t *testing.T, plain []byte) xmlFields {
	t.Helper()
	f, err := parseXMLFields(plain)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
