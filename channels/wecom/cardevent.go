package wecom

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// EventTemplateCard is the event of a click on a template card's button
// (模板卡片事件推送, 接收事件 document/path/90240): FromUserName is the
// clicker, EventKey the button's key, TaskId the card's task_id,
// ResponseCode a code for one update of the clicker's card.
const EventTemplateCard = "template_card_event"

// decodeCardEvent makes a template_card_event from a Hermes card a click:
// the clicker is FromUserName of the verified, decrypted callback (never a
// value the card carries), the card and action are what the button's key
// carried, untrusted until the gateway finds the card. The event's TaskId
// must be the card's, and its AgentID this app's (decodeMessage checks it
// for every message; a click must carry one). A card event of a card
// Hermes did not send stays a plain event: recorded, not answered.
//
// Errors wrap wxbiz.ErrMalformed.
func decodeCardEvent(f xmlFields, in *channels.Inbound) error {
	if f.get("AgentID") == "" {
		return fmt.Errorf("%w: %s without AgentID", wxbiz.ErrMalformed, EventTemplateCard)
	}
	card, action, ok := strings.Cut(f.get("EventKey"), ":")
	if !ok || !channels.ValidClick(card, action) || f.get("TaskId") != taskIDPrefix+card {
		return nil
	}
	in.MsgType = channels.TypeClick
	in.Click = &channels.Click{Card: card, Action: action, By: in.Sender.UserID}
	return nil
}

// cdata is a string written as CDATA, as WeCom writes its XML.
type cdata struct {
	Text string `xml:",cdata"`
}

// buttonReply is the passive reply that sets the clicked card's buttons
// to one grey, unclickable button named ReplaceName, in the clicker's
// view (被动回复消息格式 document/path/90241, 更新点击用户的按钮点击文案).
type buttonReply struct {
	XMLName      xml.Name `xml:"xml"`
	ToUserName   cdata    `xml:"ToUserName"`
	FromUserName cdata    `xml:"FromUserName"`
	CreateTime   int64    `xml:"CreateTime"`
	MsgType      cdata    `xml:"MsgType"`
	Button       struct {
		ReplaceName cdata `xml:"ReplaceName"`
	} `xml:"Button"`
}

// sealedReply is a passive reply as WeCom takes it: the reply encrypted,
// signed with the callback's token over the timestamp and nonce.
type sealedReply struct {
	XMLName      xml.Name `xml:"xml"`
	Encrypt      cdata    `xml:"Encrypt"`
	MsgSignature cdata    `xml:"MsgSignature"`
	TimeStamp    int64    `xml:"TimeStamp"`
	Nonce        cdata    `xml:"Nonce"`
}

// cardReply is the encrypted passive reply to the click in, answered ans
// by the gateway: the clicker's card shows ans.Card's title on its one
// greyed button (WeCom has no private note: ans.Toast is not shown). nil
// (an empty 200, no change) when the card stays as it is: someone else's
// tap, an unknown card. nonce is the callback's, echoed as WeCom's
// samples do.
func (a *App) cardReply(in channels.Inbound, ans *channels.CardAnswer, nonce string) ([]byte, error) {
	if ans == nil || ans.Card == nil || ans.Card.Title == "" {
		return nil, nil
	}
	now := a.now().Unix()
	r := buttonReply{ToUserName: cdata{in.Sender.UserID}, FromUserName: cdata{a.corpID}, CreateTime: now, MsgType: cdata{"update_button"}}
	r.Button.ReplaceName = cdata{ans.Card.Title}
	plain, err := xml.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("wecom: app %q: card reply: %w", a.name, err)
	}
	enc, err := a.crypto.Encrypt(plain, nil)
	if err != nil {
		return nil, fmt.Errorf("wecom: app %q: card reply: %w", a.name, err)
	}
	ts := strconv.FormatInt(now, 10)
	out, err := xml.Marshal(sealedReply{Encrypt: cdata{enc}, MsgSignature: cdata{a.crypto.Signature(ts, nonce, enc)}, TimeStamp: now, Nonce: cdata{nonce}})
	if err != nil {
		return nil, fmt.Errorf("wecom: app %q: card reply: %w", a.name, err)
	}
	return out, nil
}
