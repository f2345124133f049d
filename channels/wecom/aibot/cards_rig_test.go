package aibot_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// The cards end to end: a real gateway on its own Postgres database, the
// AI bot in callback mode (encrypted JSON callbacks, response_urls) or on
// a long connection (the fake WeCom socket), a model that asks to reset a
// VPN password (a skill that needs 「确认」) or which ticket to close (a
// backend that answers with options), and the skill's backend counting
// its calls.

const (
	cardBot   = gatewaytest.BotName
	cardToken = gatewaytest.BotToken
	cardKey   = gatewaytest.BotAESKey
	asker     = "zhangsan"
	bystander = "lisi"
	cardGroup = "grp-cards"
)

// cardRig is one Hermes with the bot, in either mode.
type cardRig struct {
	h      *gatewaytest.Harness
	skills *gatewaytest.CardSkills
	clock  *gatewaytest.JumpClock
	deps   gateway.Deps
	extra  string
	resp   *wecomtest.ResponseURLServer // callback mode
	ws     *wecomtest.BotWSServer       // websocket mode
	crypto *wxbiz.Crypto
	nonce  atomic.Int64
}

// newCardRig starts the rig; mode is aibot.ModeCallback or ModeWebSocket.
func newCardRig(t *testing.T, mode string) *cardRig {
	t.Helper()
	r := &cardRig{h: gatewaytest.New(t), clock: &gatewaytest.JumpClock{}}
	r.skills = gatewaytest.NewCardSkills(t)
	r.deps = gateway.Deps{Now: r.clock.Now, SkillsFS: r.skills.FS}
	r.h.Model.SetHandler(gatewaytest.CardModel)
	if mode == "websocket" {
		r.ws = wecomtest.NewBotWSServer(t, gatewaytest.WSBotID, gatewaytest.WSSecret)
		r.extra = gatewaytest.WSBotYAML(r.ws.URL())
	} else {
		r.resp = wecomtest.NewResponseURLServer(t)
		r.extra = fmt.Sprintf("  bots:\n    - name: %s\n      corp_id: %s\n      token: %s\n      encoding_aes_key: %s\n",
			cardBot, gatewaytest.CorpID, cardToken, cardKey) + gatewaytest.LocalFetchYAML
		c, err := wxbiz.NewCrypto(cardToken, cardKey, "")
		if err != nil {
			t.Fatal(err)
		}
		r.crypto = c
	}
	r.h.StartExtra(r.extra, r.deps)
	if r.ws != nil {
		if _, err := r.ws.WaitSubscriptions(gatewaytest.WithTimeout(t, 20*time.Second), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// replica starts a second gateway on the rig's database and returns its
// callback URL.
func (r *cardRig) replica(t *testing.T) string {
	t.Helper()
	first := r.h.Gateway
	second := r.h.StartExtra(r.extra, r.deps)
	r.h.Serve(first.Handler()) // the public URL stays the first replica's
	srv := httptest.NewServer(second.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// message is a message or event head from user: single chat, or the
// group where the bot is mentioned. In callback mode it carries its own
// response_url.
func (r *cardRig) message(msgID, user string, group bool) wecomtest.BotMessage {
	m := wecomtest.BotMessage{MsgID: msgID, AIBotID: gatewaytest.WSBotID, ChatType: "single", UserID: user, CreateTime: r.clock.Now().Unix()}
	if group {
		m.ChatType, m.ChatID = "group", cardGroup
	}
	if r.resp != nil {
		m.ResponseURL = r.resp.URL(msgID)
	}
	return m
}

// post sends plain as an encrypted callback to base (the public URL when
// ""), signed at the rig's clock plus skew, and returns the status and the
// opened passive reply (zero for an empty 200).
func (r *cardRig) post(t *testing.T, base string, plain []byte, skew time.Duration) (int, wecomtest.BotReply) {
	t.Helper()
	if base == "" {
		base = r.h.Srv.URL
	}
	ts := strconv.FormatInt(r.clock.Now().Add(skew).Unix(), 10)
	nonce := "n" + strconv.FormatInt(r.nonce.Add(1), 10)
	q, body := wecomtest.BotCallback(r.crypto, plain, ts, nonce)
	status, resp := gatewaytest.Post(t, base+"/wecom/bot/"+cardBot+"/callback?"+q.Encode(), body)
	if status != http.StatusOK || resp == "" {
		return status, wecomtest.BotReply{}
	}
	reply, err := wecomtest.OpenBotReply(r.crypto, []byte(resp), nonce)
	if err != nil {
		t.Fatal(err)
	}
	return status, reply
}

// say sends the asker's text in callback mode and plays WeCom's stream
// refreshes until the stream is done; it returns what the stream showed
// last.
func (r *cardRig) say(t *testing.T, msgID, text string, group bool) string {
	t.Helper()
	ctx := gatewaytest.WithTimeout(t, 20*time.Second)
	m := r.message(msgID, asker, group)
	if group {
		text = "@Hermes " + text
	}
	if _, open := r.post(t, "", m.Text(text), 0); open.MsgType != "stream" {
		t.Errorf("%s answered %+v, want a stream", msgID, open)
		return ""
	}
	for ctx.Err() == nil {
		if _, rf := r.post(t, "", m.StreamRefresh(msgID), 0); rf.Stream.Finish {
			return rf.Stream.Content
		}
	}
	t.Errorf("the stream of %s never finished", msgID)
	return ""
}

// askCallback asks in callback mode (say) and returns the card then
// POSTed to the message's response_url.
func (r *cardRig) askCallback(t *testing.T, msgID, text string, group bool) wecomtest.TemplateCard {
	t.Helper()
	ctx := gatewaytest.WithTimeout(t, 20*time.Second)
	r.say(t, msgID, text, group)
	r.h.WaitIdle(ctx)
	for _, p := range r.resp.Posts() {
		if p.Code == msgID && p.Reply.MsgType == "template_card" {
			return p.Reply.TemplateCard
		}
	}
	t.Fatalf("no card through the response_url of %s: %+v", msgID, r.resp.Posts())
	return wecomtest.TemplateCard{}
}

// tap is user's tap on the card's button i, as a callback event to base
// with msgID (WeCom's dedupe key) and its own response_url.
func (r *cardRig) tap(t *testing.T, base, msgID, user string, group bool, card wecomtest.TemplateCard, i int) (int, wecomtest.BotReply) {
	t.Helper()
	return r.post(t, base, r.message(msgID, user, group).TemplateCardEvent(card.Buttons[i].Key, card.TaskID), 0)
}

// answers are the markdown POSTed to the response_url of msgID.
func (r *cardRig) answers(msgID string) []string {
	var out []string
	for _, p := range r.resp.Posts() {
		if p.Code == msgID && p.Reply.MsgType == "markdown" {
			out = append(out, p.Reply.Markdown.Content)
		}
	}
	return out
}

func (r *cardRig) count(query string) int { return r.h.Count(query) }
