package aibot_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

// FuzzTemplateCardEvent decodes any decrypted body as a tap on a card
// (what a verified callback or an authenticated frame holds) and answers
// it. No panic; a tap that is taken is sane: the clicker is from.userid
// and nothing else, the card id and action are a Hermes button's, the
// Inbound is this bot's; its answer is JSON naming the card's task_id.
func FuzzTemplateCardEvent(f *testing.F) {
	single := wecomtest.BotMessage{MsgID: "ev-1", AIBotID: "aib", ChatType: "single", UserID: "zhangsan", ResponseURL: "https://qyapi.weixin.qq.com/r?c=1"}
	group := wecomtest.BotMessage{MsgID: "ev-2", AIBotID: "aib", ChatType: "group", ChatID: "wrg", UserID: "lisi"}
	f.Add(single.TemplateCardEvent("0123456789abcdef:ok", "hermes_0123456789abcdef"), "req-1")
	f.Add(group.TemplateCardEvent("0123456789abcdef:2", "hermes_0123456789abcdef"), "")
	f.Add(group.TemplateCardEvent("0123456789abcdef:-", "hermes_0123456789abcdef"), "")
	f.Add(single.TemplateCardEvent("0123456789abcdef:ok", "hermes_other"), "")
	f.Add(single.TemplateCardEvent(":ok", "hermes_"), "")
	f.Add(single.TemplateCardEvent("a:b:c", "hermes_a"), "")
	f.Add(group.TemplateCardEvent("c:ok", "hermes_c")[:40], "")
	f.Add([]byte(`{"msgtype":"event","msgid":"x","from":{"userid":"u"},"chattype":"group","event":{"eventtype":"template_card_event","template_card_event":{"event_key":"c:ok","task_id":"hermes_c"}}}`), "")
	f.Add([]byte(`{"msgtype":"event","event":{"eventtype":"template_card_event","template_card_event":null}}`), "")
	f.Add([]byte(`{"msgtype":"event","msgid":"x","from":{"userid":"u"},"event":{"eventtype":"template_card_event","template_card_event":{"event_key":5}}}`), "")
	b := newFuzzBot(f, aibot.ModeWebSocket, "") // a tap learns nothing: one bot serves every input
	f.Fuzz(func(t *testing.T, body []byte, reqID string) {
		in, ok, err := aibot.DecodeTap(b, body, reqID)
		if err != nil || !ok {
			if ok || (err == nil && in.Click != nil) {
				t.Fatalf("a dropped tap carries a click: %+v", in)
			}
			return
		}
		checkBotInbound(t, in, len(body))
		c := in.Click
		if in.MsgType != channels.TypeClick || c == nil || c.By != in.Sender.UserID || c.Card == "" || len(c.Card) > 64 ||
			(c.Action != "ok" && c.Action != "no" && (len(c.Action) > 2 || c.Action[0] < '1' || c.Action[0] > '9')) {
			t.Fatalf("accepted tap not sane: %+v %+v", in, c)
		}
		var head struct {
			From struct {
				UserID string `json:"userid"`
			} `json:"from"`
		}
		if json.Unmarshal(body, &head) != nil || head.From.UserID != c.By {
			t.Fatalf("clicker %q is not from.userid", c.By)
		}
		ans := &channels.CardAnswer{Outcome: channels.CardClaimed, Card: &channels.Card{ID: c.Card, Title: string(body), Text: string(body)}}
		out := aibot.TapAnswer(ans)
		if !json.Valid(out) || !utf8.Valid(out) || !strings.Contains(string(out), `"task_id":"hermes_`+c.Card+`"`) {
			t.Fatalf("answer not JSON for the card: %q", out)
		}
		if aibot.TapAnswer(&channels.CardAnswer{Outcome: channels.CardNotYours, Toast: "x"}) != nil {
			t.Fatal("a tap that changes nothing is answered")
		}
	})
}
