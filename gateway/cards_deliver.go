package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
)

// errNoCards: the part's channel shows no cards (any more) on its account.
var errNoCards = errors.New("the channel shows no cards on this account")

// sendCardPart makes one recorded attempt at a part that is a card:
//   - a new card (FormatCard) goes through the channel's channels.Carder;
//     where the platform refuses it for good (a missing permission, a card
//     it does not take) or on the job's last attempt, the same text goes
//     as a plain reply instead (typing 「确认」 works everywhere), logged
//     once and counted (hermes_card_fallbacks_total);
//   - a card's later update (FormatCardUpdate) redraws the card sent, and
//     is nothing to do for one that went as text.
func (dl *delivery) sendCardPart(ctx context.Context, conn store.Querier, ch channels.Channel, p store.OutboxPart, lastAttempt bool) error {
	card, err := store.GetCard(ctx, conn, p.CardID)
	if errors.Is(err, store.ErrNotFound) {
		gone := fmt.Errorf("gateway: card %s of reply %s not found: %w", p.CardID, p.ReplyKey, channels.ErrPermanent)
		return dl.failedPart(ctx, conn, p, gone, p.Attempts, lastAttempt)
	}
	if err != nil {
		return err
	}
	attempts, firstAt, err := store.MarkAttempt(ctx, conn, p.ID, dl.now())
	if err != nil {
		return err
	}
	out := outboundOf(p, attempts, firstAt)
	cd, isCarder := ch.(channels.Carder)
	if p.Format == channels.FormatCardUpdate {
		if !isCarder || card.MessageID == "" {
			// The card went as text (or never went): nothing to redraw.
			return store.MarkDelivered(context.WithoutCancel(ctx), conn, p.ID, "", dl.now())
		}
		var u cardUpdate
		if err := json.Unmarshal([]byte(p.Text), &u); err != nil {
			return dl.failedPart(ctx, conn, p, fmt.Errorf("gateway: card update %s: %v: %w", card.ID, err, channels.ErrPermanent), attempts, lastAttempt)
		}
		view := channels.Card{ID: card.ID, Title: u.Title, Text: cmp.Or(u.Text, card.Body), MessageID: card.MessageID}
		if err := cd.UpdateCard(ctx, p.Account, view); err != nil {
			return dl.failedPart(ctx, conn, p, err, attempts, lastAttempt)
		}
		dl.metrics.Delivered(p.Channel, nil, false)
		return store.MarkDelivered(context.WithoutCancel(ctx), conn, p.ID, card.MessageID, dl.now())
	}

	var res channels.SendResult
	sendErr := errNoCards
	if isCarder && cd.CardButtons(p.Account) > 0 {
		res, sendErr = cd.SendCard(ctx, out, channels.Card{ID: card.ID, Title: card.Title, Text: p.Text, Buttons: card.Buttons})
	}
	sentCard := sendErr == nil
	if sendErr != nil && (errors.Is(sendErr, errNoCards) || errors.Is(sendErr, channels.ErrPermanent) || lastAttempt) {
		dl.log.Warn("card not sent; sending the text confirmation instead", "reply_key", p.ReplyKey, "card_id", card.ID,
			"channel", p.Channel, "account", p.Account, "err", sendErr)
		dl.metrics.CardFallback(p.Channel)
		res, sendErr = dl.cardAsText(ctx, ch, out)
	}
	if sendErr != nil {
		return dl.failedPart(ctx, conn, p, sendErr, attempts, lastAttempt)
	}
	dl.metrics.Delivered(p.Channel, nil, false)
	if sentCard && res.MessageID != "" {
		if err := store.SetCardMessage(context.WithoutCancel(ctx), conn, card.ID, res.MessageID); err != nil {
			return err
		}
	}
	return store.MarkDelivered(context.WithoutCancel(ctx), conn, p.ID, res.MessageID, dl.now())
}

// cardAsText sends a card's text as a plain reply, under a key of its
// own (a platform's duplicate check must not take it for the card).
func (dl *delivery) cardAsText(ctx context.Context, ch channels.Channel, out channels.Outbound) (channels.SendResult, error) {
	lim := ch.Limits(out.Account)
	out.Format = lim.Format
	if out.Format == "" {
		out.Format = channels.FormatText
	}
	out.Key += "/text"
	return ch.Send(ctx, out)
}
