package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// clickMsgPrefix starts the MsgID of the message a tap on a card stores:
// "card:<id>". A card is claimed at most once, so at most one such
// message exists per card, whatever the platform's event ids.
const clickMsgPrefix = "card:"

// cardUpdateKey is the outbox reply key of a card's one later update.
func cardUpdateKey(cardID string) string { return "card-update:" + cardID }

// cardAskKey is the outbox reply key of a card sent beside a streamed
// answer (the stream shows the text, the card the buttons).
func cardAskKey(cardID string) string { return "card:" + cardID }

// newCardID is a card's id: 16 random hex characters, what a button
// carries (Feishu's value, WeCom's task_id need it short).
func newCardID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand never fails on the platforms Go supports
	return hex.EncodeToString(b)
}

// newCard is a card in answer to in with body as its text: nil where in's
// channel shows no cards on its account, body needs more than one part,
// or the channel cannot tell the asker's taps. The caller sets what it
// asks (kind, title, buttons), its session, run and times. It returns the
// channel's number of buttons too.
func (rn *runner) newCard(in channels.Inbound, body string) (*store.Card, int) {
	ch := rn.channels[in.Channel]
	cd, ok := ch.(channels.Carder)
	if !ok || len(body) > ch.Limits(in.Account).MaxBytes {
		return nil, 0
	}
	buttons := cd.CardButtons(in.Account)
	if buttons == 0 {
		return nil, 0
	}
	ref := cd.ClickRef(in.Account, in.ReplyTo)
	if ref == "" {
		return nil, 0
	}
	return &store.Card{
		ID: newCardID(), Channel: in.Channel, Account: in.Account, ChatID: in.ChatID, ChatType: in.ChatType,
		ReplyTo: in.ReplyTo, Requester: in.Sender, RequesterRef: ref, Body: body,
	}, buttons
}

// askCard is the card that asks what the session now waits for (p): a
// confirmation with 确认 and 取消, or a backend's question with its
// choices (at most the channel's buttons) as buttons; the reply, masked
// like any reply, is its body. nil (the text alone) where newCard makes
// none.
func (rn *runner) askCard(in channels.Inbound, p *store.Pending, reply string, choices []string) *store.Card {
	if p == nil {
		return nil
	}
	card, buttons := rn.newCard(in, reply)
	if card == nil {
		return nil
	}
	card.SessionID, card.RunID, card.CreatedAt, card.ExpiresAt = p.SessionID, p.RunID, p.CreatedAt, p.ExpiresAt
	words := rn.cfg.Messages
	switch {
	case p.Kind == store.PendingConfirm && buttons >= 2:
		card.Kind, card.Title = store.CardConfirm, words.Cards.Confirm
		card.Buttons = []channels.Button{
			{Action: channels.ActionConfirm, Label: words.ConfirmWords[0], Primary: true},
			{Action: channels.ActionCancel, Label: words.CancelWords[0]},
		}
	case p.Kind == store.PendingFollowup && len(choices) > 0 && len(choices) <= buttons:
		card.Kind, card.Title = store.CardChoice, words.Cards.Choose
		for i, c := range choices {
			card.Buttons = append(card.Buttons, channels.Button{Action: strconv.Itoa(i + 1), Label: c})
		}
	default:
		return nil
	}
	return card
}

// cardSettle is how the cards asking a run's pending question are shown
// once it is resolved: their title and text (the outcome; "" keeps the
// card's own text).
type cardSettle struct {
	runID, action, title, text string
}

// queueCardAnswer queues the answer of a run that asks or resolves a
// question (queueAnswer): as a card when it asks on a channel that shows
// cards, else as text; then the later update of the cards whose question
// it resolved. It returns the answer's number of parts.
func (rn *runner) queueCardAnswer(ctx context.Context, tx pgx.Tx, row store.InboundRow, sessionID int64, out outcome) (int, error) {
	to := AddressOf(row.In)
	card := rn.askCard(row.In, out.setPending, out.reply, out.choices)
	parts := 0
	if card == nil || rn.channels[row.In.Channel].Limits(row.In.Account).LiveDeadline > 0 {
		// A streamed answer shows its text live; the card then comes after it.
		n, err := rn.outbox.Queue(ctx, tx, store.AnswerKey(row.ID), to, out.reply)
		if err != nil {
			return 0, err
		}
		parts = n
	}
	if card != nil {
		if err := store.InsertCard(ctx, tx, *card); err != nil {
			return 0, err
		}
		key := store.AnswerKey(row.ID)
		if parts > 0 {
			key = cardAskKey(card.ID)
		}
		if err := rn.outbox.QueueCard(ctx, tx, key, to, card.ID, out.reply); err != nil {
			return 0, err
		}
		parts++
	}
	if out.settle != nil {
		ids, err := store.SettleCardsOfRun(ctx, tx, sessionID, out.settle.runID, out.settle.action, rn.now())
		if err != nil {
			return 0, err
		}
		for _, id := range ids {
			if err := rn.outbox.QueueCardUpdate(ctx, tx, id, to, out.settle.title, out.settle.text); err != nil {
				return 0, err
			}
		}
	}
	return parts, nil
}

// queueRatedAnswer queues the answer of run out.run as a card carrying the
// rating buttons (👍 / 👎, live for store.RateWindow), where it fits one
// card and the channel can tell the asker's taps; else as text.
func (rn *runner) queueRatedAnswer(ctx context.Context, tx pgx.Tx, row store.InboundRow, sessionID int64, out outcome) (int, error) {
	to, key := AddressOf(row.In), store.AnswerKey(row.ID)
	card, buttons := rn.newCard(row.In, out.reply)
	if card == nil || buttons < 2 {
		return rn.outbox.Queue(ctx, tx, key, to, out.reply)
	}
	words, now := rn.cfg.Messages.Ratings, rn.now()
	card.Kind, card.SessionID, card.RunID, card.CreatedAt, card.ExpiresAt = store.CardRate, sessionID, out.run.ID, now, now.Add(store.RateWindow)
	card.Buttons = []channels.Button{{Action: channels.ActionRateUp, Label: words.UpButton}, {Action: channels.ActionRateDown, Label: words.DownButton}}
	if err := store.InsertCard(ctx, tx, *card); err != nil {
		return 0, err
	}
	return 1, rn.outbox.QueueCard(ctx, tx, key, to, card.ID, out.reply)
}

// answeredCards is how the cards of the question pending asked show that
// row answered it: the option tapped, or (typed) answered.
func (rn *runner) answeredCards(row store.InboundRow, pending store.Pending) *cardSettle {
	words := rn.cfg.Messages.Cards
	title := words.Settled
	if row.In.MsgType == channels.TypeClick {
		title = fmt.Sprintf(words.Chosen, row.In.Text)
	}
	return &cardSettle{runID: pending.RunID, title: title}
}

// staleClick reports whether a tap's message (row, MsgType TypeClick)
// came after its question was replaced or resolved: the session no longer
// waits for the run the card asked for. Its answer is then Cards.Gone,
// which the card shows too, and nothing runs.
func (rn *runner) staleClick(ctx context.Context, row store.InboundRow, pending store.Pending, hasPending bool) (*cardSettle, bool, error) {
	card, err := store.GetCard(ctx, rn.pool, strings.TrimPrefix(row.In.MsgID, clickMsgPrefix))
	if errors.Is(err, store.ErrNotFound) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	if hasPending && pending.RunID == card.RunID {
		return nil, false, nil
	}
	words := rn.cfg.Messages.Cards
	return &cardSettle{runID: card.RunID, action: card.Action, title: words.Settled, text: words.Gone}, true, nil
}

// acceptClick takes a tap on a card (Inbound.Click) in one transaction
// that locks the card: a tap by someone other than the asker changes
// nothing; a tap on a card already answered (a double tap, the platform's
// redelivery, the same tap at another replica, a typed answer first) is
// answered with the card's settled state; a tap after the card expired
// marks it expired and queues its update, running nothing; so does a tap
// whose question the session no longer waits for (/reset, or a typed
// answer that took it while the card was not yet settled); otherwise the
// card is claimed and the message the tap stands for (the button's word,
// as if typed, from the asker's identity stored with the card) is stored
// with the job that answers it. The answer is returned after the commit.
//
// Errors wrap channels.ErrUnavailable: nothing was stored.
func (ib *inbox) acceptClick(ctx context.Context, in channels.Inbound) (channels.Receipt, error) {
	words := ib.cfg.Messages.Cards
	var answer channels.CardAnswer
	var receipt channels.Receipt
	err := store.InTx(ctx, ib.pool, func(tx pgx.Tx) error {
		receipt = channels.Receipt{}
		card, err := store.LockCard(ctx, tx, in.Channel, in.Account, in.Click.Card)
		if errors.Is(err, store.ErrNotFound) {
			answer = channels.CardAnswer{Outcome: channels.CardUnknown}
			return nil
		}
		if err != nil {
			return err
		}
		button, known := buttonOf(card, in.Click.Action)
		switch {
		case card.RequesterRef == "" || in.Click.By != card.RequesterRef:
			answer = channels.CardAnswer{Outcome: channels.CardNotYours, Toast: words.NotYours}
			return nil
		case !known:
			answer = channels.CardAnswer{Outcome: channels.CardUnknown}
			return nil
		case card.State != store.CardPending:
			answer = channels.CardAnswer{Outcome: channels.CardSettled, Toast: words.Settled, Card: settledView(card, ib.cfg.Messages)}
			return nil
		case !ib.now().Before(card.ExpiresAt):
			if _, err := store.ExpireCard(ctx, tx, card.ID); err != nil {
				return err
			}
			title, toast := words.Expired, words.Expired
			if card.Kind == store.CardRate { // the answer stands; only its buttons go
				title, toast = "", ib.cfg.Messages.Ratings.Nothing
			}
			answer = channels.CardAnswer{Outcome: channels.CardExpired, Toast: toast, Card: cardView(card, title, card.Body)}
			return ib.outbox.QueueCardUpdate(ctx, tx, card.ID, cardAddress(card), title, card.Body)
		case card.Kind == store.CardRate:
			answer, err = ib.rateTap(ctx, tx, card, button)
			return err
		}
		if p, ok, err := store.GetPending(ctx, tx, card.SessionID); err != nil {
			return err
		} else if !ok || p.RunID != card.RunID {
			// The question is gone (/reset, or a run that took it): the tap
			// runs nothing, and the card says so for everyone.
			if _, err := store.ClaimCard(ctx, tx, card.ID, button.Action, ib.now()); err != nil {
				return err
			}
			answer = channels.CardAnswer{Outcome: channels.CardSettled, Toast: words.Gone, Card: cardView(card, words.Settled, card.Body)}
			return ib.outbox.QueueCardUpdate(ctx, tx, card.ID, cardAddress(card), words.Settled, card.Body)
		}
		if ok, err := store.ClaimCard(ctx, tx, card.ID, button.Action, ib.now()); err != nil {
			return err
		} else if !ok { // not under the lock's guarantee alone: the claim decides
			answer = channels.CardAnswer{Outcome: channels.CardSettled, Toast: words.Settled, Card: settledView(card, ib.cfg.Messages)}
			return nil
		}
		msg := clickMessage(card, button, in.ReplyTo)
		ids, err := store.InsertInbounds(ctx, tx, []store.NewInbound{{In: msg, Status: store.InboundPending}})
		if err != nil {
			return err
		}
		if ids[0] != 0 {
			if err := ib.leases.enqueueProcess(ctx, tx, ids[0], msg.Channel); err != nil {
				return err
			}
		}
		card.Action = button.Action
		answer = channels.CardAnswer{Outcome: channels.CardClaimed, Card: cardView(card, claimedTitle(card, button, words), card.Body)}
		receipt = channels.Receipt{New: true, Answer: true}
		return nil
	})
	if err != nil {
		return channels.Receipt{}, fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
	}
	receipt.Card = &answer
	return receipt, nil
}

// rateTap takes a tap on an answer's rating button: the rating is the
// card's run's (replacing one typed before), the card loses its buttons
// for everyone, and nothing runs.
func (ib *inbox) rateTap(ctx context.Context, tx pgx.Tx, card store.Card, b channels.Button) (channels.CardAnswer, error) {
	words := ib.cfg.Messages.Ratings
	rating, thanks := 1, words.ThanksUp
	if b.Action == channels.ActionRateDown {
		rating, thanks = -1, words.ThanksDown
	}
	if ok, err := store.ClaimCard(ctx, tx, card.ID, b.Action, ib.now()); err != nil || !ok {
		return channels.CardAnswer{Outcome: channels.CardSettled, Toast: ib.cfg.Messages.Cards.Settled, Card: settledView(card, ib.cfg.Messages)}, err
	}
	if err := store.RateRun(ctx, tx, card.RunID, card.Channel, card.Account, rating, ib.now()); err != nil {
		return channels.CardAnswer{}, err
	}
	title := fmt.Sprintf(words.Rated, b.Label)
	if err := ib.outbox.QueueCardUpdate(ctx, tx, card.ID, cardAddress(card), title, card.Body); err != nil {
		return channels.CardAnswer{}, err
	}
	return channels.CardAnswer{Outcome: channels.CardClaimed, Toast: thanks, Card: cardView(card, title, card.Body)}, nil
}

// buttonOf is card's button for action.
func buttonOf(card store.Card, action string) (channels.Button, bool) {
	for _, b := range card.Buttons {
		if b.Action == action {
			return b, true
		}
	}
	return channels.Button{}, false
}

// clickMessage is the message a claimed tap stands for: the button's word
// from the asker, in the chat and session the card asked in. The tap's
// own payload is not kept: the card records what was tapped, and a
// callback may carry a token that updates the card (Feishu's event.token).
// Its answer goes to tapReplyTo, the reply address the channel built from
// the verified tap, where it gives one: a platform whose reply address is
// spent once used (the WeCom AI bot's response_url, which the card itself
// took) answers the tap through the tap's own. Else to the card's.
func clickMessage(card store.Card, b channels.Button, tapReplyTo json.RawMessage) channels.Inbound {
	replyTo := card.ReplyTo
	if len(tapReplyTo) > 0 {
		replyTo = tapReplyTo
	}
	return channels.Inbound{
		Channel: card.Channel, Account: card.Account, MsgID: clickMsgPrefix + card.ID, MsgType: channels.TypeClick,
		ChatID: card.ChatID, ChatType: card.ChatType, Sender: card.Requester, Text: b.Label, ReplyTo: replyTo,
	}
}

// cardAddress is the conversation a card was asked in.
func cardAddress(c store.Card) Address {
	return Address{Channel: c.Channel, Account: c.Account, ChatID: c.ChatID, ReplyTo: c.ReplyTo}
}

// claimedTitle is what a card shows right after the tap that claimed it.
func claimedTitle(c store.Card, b channels.Button, words config.CardMessages) string {
	switch {
	case c.Kind == store.CardChoice:
		return fmt.Sprintf(words.Chosen, b.Label)
	case b.Action == channels.ActionConfirm:
		return words.Confirming
	}
	return words.Cancelled
}

// settledView is a settled card as a repeated tap is shown it.
func settledView(c store.Card, words config.Messages) *channels.Card {
	title := words.Cards.Settled
	switch {
	case c.Kind == store.CardRate && c.State == store.CardExpired:
		title = ""
	case c.Kind == store.CardRate:
		b, _ := buttonOf(c, c.Action)
		title = fmt.Sprintf(words.Ratings.Rated, b.Label)
	case c.State == store.CardExpired:
		title = words.Cards.Expired
	}
	return cardView(c, title, c.Body)
}

// cardView is card c without live buttons, under title.
func cardView(c store.Card, title, text string) *channels.Card {
	return &channels.Card{ID: c.ID, Title: title, Text: text, MessageID: c.MessageID}
}
