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

// TestCardLayout: a card's body is plain text within WeCom's advised 112
// characters; its buttons carry the card id and the action only; a
// settled card keeps one inert button whose tap reaches no one.
func TestCardLayout(t *testing.T) {
	const id = "0123456789abcdef"
	body := "**重置** 你的 VPN 密码？\n" + strings.Repeat("参数", 100)
	var card wecomtest.TemplateCard
	if err := json.Unmarshal(aibot.CardJSON(channels.Card{ID: id, Title: "请确认", Text: body, Buttons: []channels.Button{
		{Action: channels.ActionConfirm, Label: "确认", Primary: true}, {Action: channels.ActionCancel, Label: "取消"},
	}}), &card); err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(card.SubTitleText); n != 112 || strings.Contains(card.SubTitleText, "**") ||
		!strings.HasPrefix(card.SubTitleText, "重置 你的 VPN 密码？") || !strings.HasSuffix(card.SubTitleText, "…") {
		t.Fatalf("sub_title_text %q (%d characters): want plain text cut to 112", card.SubTitleText, n)
	}
	if card.TaskID != "hermes_"+id || len(card.Buttons) != 2 || card.Buttons[0].Key != id+":ok" || card.Buttons[0].Style != 1 ||
		card.Buttons[1].Key != id+":no" || card.Buttons[1].Style != 2 {
		t.Fatalf("card %+v", card)
	}

	var settled wecomtest.TemplateCard
	if err := json.Unmarshal(aibot.CardJSON(channels.Card{ID: id, Title: "已过期", Text: "x"}), &settled); err != nil {
		t.Fatal(err)
	}
	if len(settled.Buttons) != 1 || settled.Buttons[0].Style != 4 || settled.Buttons[0].Text != "已过期" {
		t.Fatalf("settled card %+v: want one inert button under its title", settled)
	}
	b := newFuzzBot(t, aibot.ModeWebSocket, "")
	m := wecomtest.BotMessage{MsgID: "ev", AIBotID: "aib", ChatType: "single", UserID: "zhangsan"}
	if _, handled, err := aibot.DecodeTap(b, m.TemplateCardEvent(settled.Buttons[0].Key, settled.TaskID), "r"); handled || err != nil {
		t.Fatalf("a tap on the settled button: handled %v, %v; want it dropped", handled, err)
	}
	in, handled, err := aibot.DecodeTap(b, m.TemplateCardEvent(card.Buttons[0].Key, card.TaskID), "r")
	if !handled || err != nil || in.Click.Card != id || in.Click.Action != "ok" || in.Click.By != "zhangsan" {
		t.Fatalf("a tap on 确认: %+v %v %v", in.Click, handled, err)
	}
	if _, handled, _ := aibot.DecodeTap(b, m.TemplateCardEvent(card.Buttons[0].Key, "hermes_fedcba9876543210"), "r"); handled {
		t.Fatal("a key of one card on another card's task_id was taken")
	}
}
