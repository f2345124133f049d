package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hermes-gw/hermes/channels"
)

// MaxCardButtons is how many buttons a Hermes card carries on Feishu:
// one action module lays out 3–5 buttons on a phone before wrapping
// (cards.md: "Choice: 3–5 buttons or select_static").
const MaxCardButtons = 5

var _ channels.Carder = (*Channel)(nil)

// CardButtons is MaxCardButtons for an app with cards on, else 0.
func (c *Channel) CardButtons(account string) int {
	if a, ok := c.apps[account]; ok && a.cfg.Cards != nil && *a.cfg.Cards {
		return MaxCardButtons
	}
	return 0
}

// ClickRef is the asker's open_id: card.action.trigger names the clicker
// by operator.open_id always, and by user_id not over the long
// connection (cards.md, trap 3).
func (c *Channel) ClickRef(_ string, address json.RawMessage) string {
	var rt replyTo
	if json.Unmarshal(address, &rt) != nil {
		return ""
	}
	return rt.OpenID
}

// SendCard replies to out.ReplyTo with card as an interactive message
// (JSON 1.0, update_multi so that a later PATCH shows everyone the
// outcome), the asker mentioned in groups, under the part's uuid.
//
// Errors wrap channels.ErrPermanent for an address or code no retry
// fixes (a missing scope, content Feishu rejects), *APIError when Feishu
// answered.
func (c *Channel) SendCard(ctx context.Context, out channels.Outbound, card channels.Card) (channels.SendResult, error) {
	a, rt, err := c.appFor(out)
	if err != nil {
		return channels.SendResult{}, err
	}
	card.Text = atMarkdown(mentionOf(rt, out.Part)) + card.Text
	id, err := a.post(ctx, rt, "interactive", string(cardJSON(card)), replyUUID(out.Key))
	if err != nil {
		a.alert(err)
		return channels.SendResult{}, fmt.Errorf("feishu: app %q: card to %s%s: %w", a.cfg.Name, rt.MessageID, rt.ChatID, err)
	}
	return channels.SendResult{MessageID: id}, nil
}

// UpdateCard redraws the card sent as card.MessageID for everyone
// (PATCH /open-apis/im/v1/messages/:message_id; the card was sent with
// update_multi, within Feishu's 14 days).
//
// Errors wrap channels.ErrPermanent for codes no retry fixes.
func (c *Channel) UpdateCard(ctx context.Context, account string, card channels.Card) error {
	a, ok := c.apps[account]
	if !ok {
		return fmt.Errorf("feishu: unknown account %q: %w", account, channels.ErrPermanent)
	}
	body := map[string]string{"content": string(cardJSON(card))}
	err := a.api.call(ctx, "im/v1/messages/patch", http.MethodPatch, "/open-apis/im/v1/messages/"+pathEscape(card.MessageID), nil, body, nil)
	if err != nil {
		a.alert(err)
		return fmt.Errorf("feishu: app %q: update card %s: %w", a.cfg.Name, card.MessageID, err)
	}
	return nil
}

// appFor is the app and reply address of out.
func (c *Channel) appFor(out channels.Outbound) (*App, replyTo, error) {
	a, ok := c.apps[out.Account]
	if !ok {
		return nil, replyTo{}, fmt.Errorf("feishu: unknown account %q: %w", out.Account, channels.ErrPermanent)
	}
	rt, err := a.replyAddress(out.ReplyTo)
	return a, rt, err
}

// atMarkdown is a card markdown mention of openID, or "".
func atMarkdown(openID string) string {
	if openID == "" {
		return ""
	}
	return "<at id=" + openID + "></at> "
}

// buttonValue is what a Hermes button carries back in
// event.action.value: the card's id and the button's action, nothing else.
type buttonValue struct {
	Card   string `json:"c"`
	Action string `json:"a"`
}

// cardJSON is card as Feishu's card JSON 1.0: a header with the title, a
// markdown element with the text and an action module with the buttons
// (none once settled). JSON 1.0 because a callback's answer with a 2.0
// card has been reported refused (200673; cards.md).
func cardJSON(card channels.Card) []byte {
	elements := []any{map[string]any{"tag": "markdown", "content": card.Text}}
	if len(card.Buttons) > 0 {
		actions := make([]any, 0, len(card.Buttons))
		for _, b := range card.Buttons {
			kind := "default"
			if b.Primary {
				kind = "primary"
			}
			actions = append(actions, map[string]any{
				"tag": "button", "type": kind,
				"text":  map[string]string{"tag": "plain_text", "content": b.Label},
				"value": buttonValue{Card: card.ID, Action: b.Action},
			})
		}
		elements = append(elements, map[string]any{"tag": "action", "actions": actions})
	}
	template := "blue"
	if len(card.Buttons) == 0 {
		template = "grey"
	}
	c := map[string]any{
		"config":   map[string]bool{"update_multi": true, "wide_screen_mode": true},
		"elements": elements,
	}
	if card.Title != "" { // an answer with rating buttons has no header
		c["header"] = map[string]any{"template": template, "title": map[string]string{"tag": "plain_text", "content": card.Title}}
	}
	b, _ := marshalJSON(c) // maps of strings and slices always marshal
	return b
}
