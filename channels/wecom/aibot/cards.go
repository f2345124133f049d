package aibot

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
)

// Template cards (模板卡片类型, doc 101032): Hermes asks with a
// button_interaction card, its body as the sub-title, one button per
// answer.
const (
	// MaxCardButtons: a button_interaction card's button_list holds at
	// most 6 buttons.
	MaxCardButtons = 6
	// maxCardTextRunes: WeCom advises a sub_title_text of at most 112
	// characters. The card's body is cut there: the whole question is
	// shown in the message's stream right above the card.
	maxCardTextRunes = 112
	// maxButtonKeyBytes: a button's key is at most 1024 bytes, and comes
	// back as the tap's event_key.
	maxButtonKeyBytes = 1024
	// maxTaskIDBytes: a card's task_id is at most 128 bytes of
	// [0-9A-Za-z_-@], unique per bot.
	maxTaskIDBytes = 128
)

// Button styles of a button_interaction card (1–4).
const (
	buttonPrimary = 1 // the confirming button
	buttonPlain   = 2
	buttonSettled = 4 // the one button of a settled card: it does nothing
)

// cardTypeButtons is the card type of every Hermes card.
const cardTypeButtons = "button_interaction"

// botMsgTemplateCard is the msgtype of a card sent (response_url,
// aibot_send_msg).
const botMsgTemplateCard = "template_card"

// templateCard is WeCom's TemplateCard, the fields Hermes uses.
type templateCard struct {
	CardType     string       `json:"card_type"`
	MainTitle    cardTitle    `json:"main_title"`
	SubTitleText string       `json:"sub_title_text,omitempty"`
	TaskID       string       `json:"task_id"`
	ButtonList   []cardButton `json:"button_list"`
}

type cardTitle struct {
	Title string `json:"title"`
}

type cardButton struct {
	Text  string `json:"text"`
	Style int    `json:"style"`
	Key   string `json:"key"`
}

// cardUpdate answers a tap (template_card_event): the card redrawn, as a
// callback's encrypted passive reply or the body of
// aibot_respond_update_msg on the event's req_id. Without userids every
// copy of the card changes (everyone in a group).
type cardUpdate struct {
	ResponseType string       `json:"response_type"` // responseUpdateCard
	TemplateCard templateCard `json:"template_card"`
}

const responseUpdateCard = "update_template_card"

// taskID is the task_id of the card with id: derived from it, so that an
// update names the card the tap came from (WeCom wants the event's
// task_id back) and a bot never sends two cards with one task_id (42014
// on the app, the same rule on bots).
func taskID(cardID string) string { return "hermes_" + cardID }

// buttonKey is the key of a card's button: the card id and the button's
// action, nothing else (the asker and what the call does stay in Postgres).
func buttonKey(cardID, action string) string { return cardID + ":" + action }

// settledAction is the action of a settled card's one button: no Hermes
// action, so a tap on it is dropped before the sink (cardevent.go).
const settledAction = "-"

// cardOf is c as a WeCom template card: the title, the body as plain text
// cut to maxCardTextRunes, one button per answer; a settled card (no
// buttons) keeps one button under its title, style 4, that does nothing:
// a button_interaction card needs one.
func cardOf(c channels.Card) templateCard {
	tc := templateCard{
		CardType:     cardTypeButtons,
		MainTitle:    cardTitle{Title: c.Title},
		SubTitleText: cardText(c.Text),
		TaskID:       taskID(c.ID),
	}
	for _, b := range c.Buttons {
		style := buttonPlain
		if b.Primary {
			style = buttonPrimary
		}
		tc.ButtonList = append(tc.ButtonList, cardButton{Text: b.Label, Style: style, Key: buttonKey(c.ID, b.Action)})
	}
	if len(tc.ButtonList) == 0 {
		tc.ButtonList = []cardButton{{Text: c.Title, Style: buttonSettled, Key: buttonKey(c.ID, settledAction)}}
	}
	return tc
}

// cardText is a card's body as a template card shows it: plain text (no
// markdown there), at most maxCardTextRunes characters.
func cardText(text string) string {
	text = channels.AdaptMarkdown(text, channels.DialectNone)
	if utf8.RuneCountInString(text) <= maxCardTextRunes {
		return text
	}
	runes := []rune(text)
	return string(runes[:maxCardTextRunes-1]) + "…"
}

// CardButtons is MaxCardButtons: both modes send and update cards, on
// the callback URL or the socket the bot already has (no setting).
func (b *Bot) CardButtons() int { return MaxCardButtons }

// ClickRef is the asker's WeCom UserID: a tap's callback names the
// clicker by from.userid, as a message names its sender.
func (b *Bot) ClickRef(replyTo json.RawMessage) string {
	var rt botReplyTo
	if json.Unmarshal(replyTo, &rt) != nil {
		return ""
	}
	return rt.UserID
}

// SendCard sends card in reply to the message out.ReplyTo names. How
// depends on how that message is answered:
//   - callback mode: POST to the message's response_url with msgtype
//     template_card. The answer's text was shown by the message's stream
//     (passive replies, polled); the stream cannot carry the card
//     (stream_with_template_card is a passive reply, answered from the
//     run's progress, which holds no card), and the response_url is the
//     one way left to speak once the stream is done. It takes one POST
//     within an hour, which is why a tap's answer goes through the tap's
//     own response_url (gateway: clickMessage).
//   - websocket mode: aibot_send_msg with msgtype template_card, as every
//     part after the stream goes (Send): the message's req_id belongs to
//     its stream, and a template card answers a req_id only once.
//
// The card has no message id: WeCom lets a card change only in the answer
// to its tap, so UpdateCard never runs for it (the gateway updates only a
// card with one).
//
// Errors are Send's: channels.ErrPermanent where no retry helps (the
// gateway then sends the text confirmation), errNoSocket without the
// live socket here.
func (b *Bot) SendCard(ctx context.Context, out channels.Outbound, card channels.Card) (channels.SendResult, error) {
	var rt botReplyTo
	if err := json.Unmarshal(out.ReplyTo, &rt); err != nil || rt.ChatID == "" {
		return channels.SendResult{}, fmt.Errorf("wecom: bot %q: card reply address %s: %w", b.name, out.ReplyTo, channels.ErrPermanent)
	}
	card.Text = out.Text
	tc := cardOf(card)
	if err := checkCard(tc); err != nil {
		return channels.SendResult{}, fmt.Errorf("wecom: bot %q: card %s: %w", b.name, card.ID, err)
	}
	var err error
	if rt.Mode == ModeWebSocket {
		err = b.push(ctx, botReply{ChatID: rt.ChatID, MsgType: botMsgTemplateCard, TemplateCard: &tc})
	} else {
		err = b.postResponseURL(ctx, rt, botReply{MsgType: botMsgTemplateCard, TemplateCard: &tc}, b.now())
	}
	if err != nil {
		return channels.SendResult{}, fmt.Errorf("wecom: bot %q: card %s to %q: %w", b.name, card.ID, rt.ChatID, err)
	}
	return channels.SendResult{}, nil
}

// UpdateCard does nothing: an AI bot's card changes only in the answer
// to a tap (within 5 s, once); there is no later update, and the run's
// result goes as a message of its own. The gateway never calls it for a
// bot's card (SendCard gives no message id); should it, nothing is to be
// retried.
func (b *Bot) UpdateCard(context.Context, channels.Card) error { return nil }

// checkCard refuses a card WeCom would: a key or task_id over its limit.
// Errors wrap channels.ErrPermanent.
func checkCard(tc templateCard) error {
	if len(tc.TaskID) > maxTaskIDBytes {
		return fmt.Errorf("task_id of %d bytes over WeCom's %d: %w", len(tc.TaskID), maxTaskIDBytes, channels.ErrPermanent)
	}
	if len(tc.ButtonList) > MaxCardButtons {
		return fmt.Errorf("%d buttons over WeCom's %d: %w", len(tc.ButtonList), MaxCardButtons, channels.ErrPermanent)
	}
	for _, btn := range tc.ButtonList {
		if len(btn.Key) > maxButtonKeyBytes {
			return fmt.Errorf("button key of %d bytes over WeCom's %d: %w", len(btn.Key), maxButtonKeyBytes, channels.ErrPermanent)
		}
	}
	return nil
}
