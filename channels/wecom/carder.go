package wecom

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

// Cards, by account: an AI bot's are its own (aibot/cards.go); a
// self-built app shows none here (0 buttons: the gateway asks in text).

var _ channels.Carder = (*Channel)(nil)

// CardButtons is how many buttons a card of account's carries: an AI
// bot's MaxCardButtons, an app's 0.
func (c *Channel) CardButtons(account string) int {
	if b, ok := c.bots[account]; ok {
		return b.CardButtons()
	}
	return 0
}

// ClickRef is the id a tap by the asker of the message at replyTo carries:
// on an AI bot the asker's UserID; "" elsewhere.
func (c *Channel) ClickRef(account string, replyTo json.RawMessage) string {
	if b, ok := c.bots[account]; ok {
		return b.ClickRef(replyTo)
	}
	return ""
}

// SendCard sends card through the AI bot named out.Account. Errors wrap
// channels.ErrPermanent for an account that shows no cards.
func (c *Channel) SendCard(ctx context.Context, out channels.Outbound, card channels.Card) (channels.SendResult, error) {
	if b, ok := c.bots[out.Account]; ok {
		return b.SendCard(ctx, out, card)
	}
	return channels.SendResult{}, fmt.Errorf("wecom: account %q shows no cards: %w", out.Account, channels.ErrPermanent)
}

// UpdateCard redraws a card sent before: nothing to do on an AI bot (its
// cards change only in the answer to a tap). Errors wrap
// channels.ErrPermanent for an account that shows no cards.
func (c *Channel) UpdateCard(ctx context.Context, account string, card channels.Card) error {
	if b, ok := c.bots[account]; ok {
		return b.UpdateCard(ctx, card)
	}
	return fmt.Errorf("wecom: account %q shows no cards: %w", account, channels.ErrPermanent)
}
