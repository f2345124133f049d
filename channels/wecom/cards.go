package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// Limits of a template card (模板卡片消息, 发送应用消息 document/path/90236).
const (
	// MaxCardButtons: button_list of a button_interaction card holds at
	// most 6 buttons ("列表长度不超过6").
	MaxCardButtons = 6
	// MaxCardTextRunes: sub_title_text, the card's body, should not exceed
	// 112 characters ("建议不超过112个字"). A longer body is sent as a text
	// message just before the card, which then carries only its title: a
	// confirmation's arguments are never cut.
	MaxCardTextRunes = 112
	// maxTaskIDBytes: task_id is at most 128 bytes of [0-9A-Za-z_\-@] and
	// unique per app; anything else is refused with errcode 42014.
	maxTaskIDBytes = 128
	// maxButtonKeyBytes: a button's key comes back as EventKey, at most
	// 1024 bytes.
	maxButtonKeyBytes = 1024
)

// errTaskIDUsed: message/send refused the card's task_id, which this app
// already used (or which breaks the charset and length rule).
const errTaskIDUsed = 42014

// Button styles of button_list: 1 is the blue, primary one; 2 the plain
// one (1–4, "按钮样式，目前可填1~4").
const (
	buttonStylePrimary = 1
	buttonStylePlain   = 2
)

// taskIDPrefix starts the task_id of every Hermes card: "h_<card id>".
// The card id is random and unique, so the task_id is unique per app, as
// WeCom requires, and a click's TaskId names the card it came from.
const taskIDPrefix = "h_"

var _ channels.Carder = (*Channel)(nil)

// CardButtons is MaxCardButtons for an app with cards on (the default),
// what an AI bot says for itself, else 0.
func (c *Channel) CardButtons(account string) int {
	if bc, ok := c.bots[account]; ok {
		return bc.CardButtons()
	}
	if a, ok := c.apps[account]; ok && a.cards {
		return MaxCardButtons
	}
	return 0
}

// ClickRef is the asker's userid: a template_card_event names the clicker
// by FromUserName, the same id the asker's message came from.
func (c *Channel) ClickRef(account string, replyTo json.RawMessage) string {
	if bc, ok := c.bots[account]; ok {
		return bc.ClickRef(replyTo)
	}
	if _, ok := c.apps[account]; !ok {
		return ""
	}
	var rt appReplyTo
	if json.Unmarshal(replyTo, &rt) != nil {
		return ""
	}
	return rt.ToUser
}

// SendCard sends card through the app (or AI bot) named out.Account.
// Errors: see App.SendCard.
func (c *Channel) SendCard(ctx context.Context, out channels.Outbound, card channels.Card) (channels.SendResult, error) {
	if bc, ok := c.bots[out.Account]; ok {
		return bc.SendCard(ctx, out, card)
	}
	a, ok := c.apps[out.Account]
	if !ok {
		return channels.SendResult{}, fmt.Errorf("wecom: account %q shows no cards: %w", out.Account, channels.ErrPermanent)
	}
	return a.SendCard(ctx, out, card)
}

// UpdateCard redraws a card the app (or AI bot) named account sent.
// Errors: see App.UpdateCard.
func (c *Channel) UpdateCard(ctx context.Context, account string, card channels.Card) error {
	if bc, ok := c.bots[account]; ok {
		return bc.UpdateCard(ctx, card)
	}
	a, ok := c.apps[account]
	if !ok {
		return fmt.Errorf("wecom: account %q shows no cards: %w", account, channels.ErrPermanent)
	}
	return a.UpdateCard(ctx, card)
}

// templateCard is a button_interaction template card as message/send and
// update_template_card take it (document/path/90236 and 94888).
type templateCard struct {
	CardType     string       `json:"card_type"`
	MainTitle    mainTitle    `json:"main_title"`
	SubTitleText string       `json:"sub_title_text,omitempty"`
	TaskID       string       `json:"task_id,omitempty"` // on send only: an update ignores it
	ButtonList   []cardButton `json:"button_list"`
	// ReplaceText replaces the buttons by one grey button that cannot be
	// clicked (a settled card).
	ReplaceText string `json:"replace_text,omitempty"`
}

type mainTitle struct {
	Title string `json:"title"`
}

type cardButton struct {
	Type  int    `json:"type"` // 0: the click is a callback (template_card_event)
	Text  string `json:"text"`
	Style int    `json:"style"`
	Key   string `json:"key"`
}

// cardRequest is message/send's body for a template card.
type cardRequest struct {
	ToUser       string       `json:"touser"`
	MsgType      string       `json:"msgtype"`
	AgentID      int64        `json:"agentid"`
	TemplateCard templateCard `json:"template_card"`
	duplicateCheck
}

// updateRequest is update_template_card's body: the card redrawn for
// everyone it was sent to (atall: the send had one recipient, the asker).
type updateRequest struct {
	AtAll        int          `json:"atall"`
	AgentID      int64        `json:"agentid"`
	ResponseCode string       `json:"response_code"`
	TemplateCard templateCard `json:"template_card"`
}

// taskID is the task_id of the card with id: "h_<id>". Errors wrap
// channels.ErrPermanent for an id WeCom's rule refuses.
func taskID(id string) (string, error) {
	t := taskIDPrefix + id
	if id == "" || len(t) > maxTaskIDBytes || !taskIDChars(t) {
		return "", fmt.Errorf("wecom: card id %q makes no task_id: %w", id, channels.ErrPermanent)
	}
	return t, nil
}

// taskIDChars reports whether s holds only task_id's characters.
func taskIDChars(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '-' || r == '@') {
			return false
		}
	}
	return true
}

// buttonKey is what a Hermes button carries back as EventKey: the card id
// and the button's action, nothing else ("<id>:<action>").
func buttonKey(cardID, action string) string { return cardID + ":" + action }

// SendCard sends card to the user of out.ReplyTo as a button_interaction
// template card: the title, the body as sub_title_text, one callback
// button per card button. A body over MaxCardTextRunes goes first as a
// text message (out.Text through Send), the card then without it. The
// result's MessageID is the send's response_code, which the card's one
// later update spends (UpdateCard); "" when WeCom gave none.
//
// A retry whose task_id WeCom says is used (errcode 42014) found the card
// delivered by an earlier attempt whose answer was lost: it returns no
// error and no response_code (the card then keeps what its taps show).
// So does a card WeCom refuses for good after its long body went as text
// (cardRefused).
//
// Errors wrap channels.ErrPermanent for an app with cards off, a card
// without buttons or with more than MaxCardButtons, and WeCom's permanent
// errcodes (a card WeCom refuses); they wrap *wxbiz.APIError when WeCom
// answered.
func (a *App) SendCard(ctx context.Context, out channels.Outbound, card channels.Card) (channels.SendResult, error) {
	var rt appReplyTo
	if err := json.Unmarshal(out.ReplyTo, &rt); err != nil || rt.ToUser == "" {
		return channels.SendResult{}, fmt.Errorf("wecom: app %q: card reply address: %w", a.name, channels.ErrPermanent)
	}
	switch {
	case !a.cards:
		return channels.SendResult{}, fmt.Errorf("wecom: app %q: cards are off: %w", a.name, channels.ErrPermanent)
	case len(card.Buttons) == 0 || len(card.Buttons) > MaxCardButtons:
		return channels.SendResult{}, fmt.Errorf("wecom: app %q: card of %d buttons, want 1 to %d: %w",
			a.name, len(card.Buttons), MaxCardButtons, channels.ErrPermanent)
	}
	task, err := taskID(card.ID)
	if err != nil {
		return channels.SendResult{}, err
	}
	text, textSent := card.Text, false
	if utf8.RuneCountInString(text) > MaxCardTextRunes {
		// A retry asks for the duplicate check: the text an earlier attempt
		// delivered is not delivered twice.
		body := out
		body.Text, body.Format = text, channels.FormatText
		if _, err := a.Send(ctx, body); err != nil {
			return channels.SendResult{}, err
		}
		text, textSent = "", true
	}
	tc := templateCard{CardType: "button_interaction", MainTitle: mainTitle{Title: card.Title}, SubTitleText: text, TaskID: task}
	for _, b := range card.Buttons {
		key := buttonKey(card.ID, b.Action)
		if len(key) > maxButtonKeyBytes {
			return channels.SendResult{}, fmt.Errorf("wecom: app %q: button key of %d bytes: %w", a.name, len(key), channels.ErrPermanent)
		}
		style := buttonStylePlain
		if b.Primary {
			style = buttonStylePrimary
		}
		tc.ButtonList = append(tc.ButtonList, cardButton{Text: b.Label, Style: style, Key: key})
	}
	req := cardRequest{ToUser: rt.ToUser, MsgType: "template_card", AgentID: a.agent, TemplateCard: tc, duplicateCheck: a.duplicateCheck(out)}
	resp, err := a.postMessage(ctx, "MessageSendTemplateCard", req, rt.ToUser)
	if err != nil {
		var apiErr *wxbiz.APIError
		switch {
		case !errors.As(err, &apiErr) || apiErr.Code != errTaskIDUsed:
			return channels.SendResult{}, a.cardRefused(card, textSent, err)
		case out.Attempt > 0:
			a.log.Warn("wecom: card delivered by an earlier attempt; its later update is lost",
				"account", a.name, "card_id", card.ID, "task_id", task)
			return channels.SendResult{}, nil
		}
		// A first attempt's task_id refused: no retry changes it.
		return channels.SendResult{}, a.cardRefused(card, textSent, fmt.Errorf("%w: %w", err, channels.ErrPermanent))
	}
	return channels.SendResult{MessageID: resp.ResponseCode}, nil
}

// cardRefused is SendCard's error err, except where WeCom refused the card
// for good after its body went as text: that text is the confirmation
// the gateway would fall back to, so the card counts as sent (without a
// response_code) rather than the text going twice.
func (a *App) cardRefused(card channels.Card, textSent bool, err error) error {
	if !textSent || !errors.Is(err, channels.ErrPermanent) {
		return err
	}
	a.log.Warn("wecom: card refused after its text went; the text stands for it",
		"account", a.name, "card_id", card.ID, "err", err)
	return nil
}

// UpdateCard redraws, for everyone it was sent to, the card whose send
// answered card.MessageID as its response_code
// (POST /cgi-bin/message/update_template_card): card.Title as the title,
// card.Text (cut at MaxCardTextRunes: the whole outcome is also a message
// in the chat) as its body, and the title again on the one grey button
// that replaces the live ones. A response_code works once, within 72 h.
//
// Errors wrap channels.ErrPermanent for a card without a response_code
// and WeCom's permanent errcodes; *wxbiz.APIError when WeCom answered.
func (a *App) UpdateCard(ctx context.Context, card channels.Card) error {
	if card.MessageID == "" {
		return fmt.Errorf("wecom: app %q: card %s has no response_code: %w", a.name, card.ID, channels.ErrPermanent)
	}
	req := updateRequest{AtAll: 1, AgentID: a.agent, ResponseCode: card.MessageID, TemplateCard: settledCard(card)}
	return a.callJSON(ctx, "message/update_template_card", "update card "+card.ID, req)
}

// settledCard is card as a template card without live buttons: its one
// button is greyed out under the title (replace_text).
func settledCard(card channels.Card) templateCard {
	return templateCard{
		CardType:     "button_interaction",
		MainTitle:    mainTitle{Title: card.Title},
		SubTitleText: cutRunes(card.Text, MaxCardTextRunes),
		ButtonList:   []cardButton{{Text: card.Title, Style: buttonStylePlain, Key: buttonKey(card.ID, "settled")}},
		ReplaceText:  card.Title,
	}
}

// cutRunes is s cut to at most n characters, the last one "…" when cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
