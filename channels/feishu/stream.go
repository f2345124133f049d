package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/hermes-gw/hermes/channels"
)

// Streaming card layout (card JSON 2.0): one markdown element whose content
// is replaced with the whole answer so far.
const (
	streamElementID = "answer"
	// cardUpdateGap spaces one card's updates so that no second holds
	// CardUpdatesPerSecond of them, whatever the poll interval.
	cardUpdateGap = time.Second / (CardUpdatesPerSecond - 2)
)

// The live reply of an app with streaming: a CardKit card replying to the
// message, its element replaced with the answer so far (each update under
// the next sequence number, paced to the card's and the app's CardKit
// budget), streaming mode turned off at the end. The gateway drives it
// (channels.RunLive); when no card can be opened or updated, the answer
// goes as a message (send.go).

var _ channels.LiveReplier = (*Channel)(nil)

// Open creates the streaming card of the message out.ReplyTo names, showing
// out.Text, and replies to the message with it.
//
// Errors: the app does not stream or ReplyTo names no message (wrapping
// channels.ErrPermanent), or Feishu refused the card or the reply.
func (c *Channel) Open(ctx context.Context, out channels.Outbound) (channels.Live, error) {
	a, ok := c.apps[out.Account]
	if !ok || !a.cfg.Streaming {
		return nil, fmt.Errorf("feishu: account %q does not stream: %w", out.Account, channels.ErrPermanent)
	}
	var rt replyTo
	if err := json.Unmarshal(out.ReplyTo, &rt); err != nil || rt.MessageID == "" {
		return nil, fmt.Errorf("feishu: app %q: reply address %s names no message: %w", a.cfg.Name, out.ReplyTo, channels.ErrPermanent)
	}
	card, err := a.openCard(ctx, rt.MessageID, out.Text)
	if err != nil {
		return nil, fmt.Errorf("feishu: app %q: streaming card: %w", a.cfg.Name, err)
	}
	return card, nil
}

// card is one open streaming card.
type card struct {
	a        *App
	id       string
	seq      int    // last sequence used; each update takes the next
	shown    string // content the card shows
	perCard  *rate.Limiter
	streamOn bool
}

// Update shows soFar in the card (its beginning, when it is longer than
// a part).
func (c *card) Update(ctx context.Context, soFar string) error {
	if text := clip(soFar, MaxPartBytes); text != c.shown {
		return c.update(ctx, text)
	}
	return nil
}

// Finish shows the final reply's first part and ends streaming mode. Once
// the card shows the part, a failure to end streaming mode is only
// logged: the user has the answer.
func (c *card) Finish(ctx context.Context, final channels.Outbound) (channels.SendResult, error) {
	if final.Text != c.shown {
		if err := c.update(ctx, final.Text); err != nil {
			return channels.SendResult{}, err
		}
	}
	if err := c.setStreaming(ctx, false); err != nil {
		c.a.log.Warn("feishu: cannot end the card's streaming mode", "card_id", c.id, "err", err)
	}
	return channels.SendResult{}, nil
}

// Abandon shows text (if it differs) and ends streaming mode.
func (c *card) Abandon(ctx context.Context, text string) error {
	var errs []error
	if text = clip(text, MaxPartBytes); text != c.shown {
		errs = append(errs, c.update(ctx, text))
	}
	if c.streamOn {
		errs = append(errs, c.setStreaming(ctx, false))
	}
	return errors.Join(errs...)
}

// openCard creates the card entity showing text and replies to msgID
// with it.
func (a *App) openCard(ctx context.Context, msgID, text string) (*card, error) {
	data, err := marshalJSON(map[string]any{
		"schema": "2.0",
		"config": map[string]any{
			"streaming_mode": true,
			"summary":        map[string]string{"content": text},
		},
		"body": map[string]any{"elements": []map[string]string{
			{"tag": "markdown", "element_id": streamElementID, "content": text},
		}},
	})
	if err != nil {
		return nil, err
	}
	var out struct {
		Data struct {
			CardID string `json:"card_id"`
		} `json:"data"`
	}
	if err := a.cardCall(ctx, "cardkit/v1/cards", http.MethodPost, "/open-apis/cardkit/v1/cards",
		map[string]string{"type": "card_json", "data": string(data)}, &out); err != nil {
		return nil, err
	}
	if out.Data.CardID == "" {
		return nil, fmt.Errorf("feishu: card created without card_id")
	}
	content, _ := marshalJSON(map[string]any{"type": "card", "data": map[string]string{"card_id": out.Data.CardID}})
	if _, err := a.post(ctx, replyTo{MessageID: msgID}, "interactive", string(content), replyUUID("card:"+msgID)); err != nil {
		return nil, err
	}
	return &card{
		a: a, id: out.Data.CardID, shown: text, streamOn: true,
		perCard: rate.NewLimiter(rate.Every(cardUpdateGap), 1),
	}, nil
}

// update replaces the element's content with text under the next
// sequence number.
func (c *card) update(ctx context.Context, text string) error {
	if err := c.perCard.Wait(ctx); err != nil {
		return err
	}
	c.seq++
	err := c.a.cardCall(ctx, "cardkit/v1/cards/elements/content", http.MethodPut,
		"/open-apis/cardkit/v1/cards/"+pathEscape(c.id)+"/elements/"+streamElementID+"/content",
		map[string]any{"content": text, "sequence": c.seq}, nil)
	if err == nil {
		c.shown = text
	}
	return err
}

// setStreaming switches the card's streaming mode (off ends the typing
// effect and lets the client show the card as final).
func (c *card) setStreaming(ctx context.Context, on bool) error {
	if err := c.perCard.Wait(ctx); err != nil {
		return err
	}
	settings, _ := marshalJSON(map[string]any{"config": map[string]any{"streaming_mode": on}})
	c.seq++
	err := c.a.cardCall(ctx, "cardkit/v1/cards/settings", http.MethodPatch,
		"/open-apis/cardkit/v1/cards/"+pathEscape(c.id)+"/settings",
		map[string]any{"settings": string(settings), "sequence": c.seq}, nil)
	if err == nil {
		c.streamOn = on
	}
	return err
}

// cardCall is an OpenAPI call within the app's CardKit budget.
func (a *App) cardCall(ctx context.Context, op, method, path string, body, out any) error {
	if err := a.cardRate.Wait(ctx); err != nil {
		return err
	}
	return a.api.call(ctx, op, method, path, nil, body, out)
}

// clip cuts text to at most n bytes on a rune boundary, marking the cut.
func clip(text string, n int) string {
	if len(text) <= n {
		return text
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}
