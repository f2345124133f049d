package channels

import (
	"context"
	"encoding/json"
)

// TypeClick is the MsgType of a tap on a card's button (Inbound.Click).
const TypeClick = "card_click"

// Formats of the outbox parts that are cards: a new card (Carder.SendCard)
// and the later update of one already sent (Carder.UpdateCard).
const (
	FormatCard       = "card"
	FormatCardUpdate = "card_update"
)

// Card actions a confirmation's buttons carry; a choice's buttons carry
// the option's number ("1", "2", …).
const (
	ActionConfirm = "ok"
	ActionCancel  = "no"
)

// Actions of the rating buttons an answer sent as a card carries
// (Limits.CardAnswers).
const (
	ActionRateUp   = "up"
	ActionRateDown = "down"
)

// Bounds on what a Hermes button carries back: its card ids are 16 hex
// characters and its actions a word or an option's number. A value longer,
// or of other characters, is not a Hermes button's.
const (
	MaxCardIDLen = 64
	MaxActionLen = 16
)

// ValidClick reports whether card and action can be what a Hermes button
// carries: 1 to MaxCardIDLen and 1 to MaxActionLen ASCII letters and
// digits. A channel checks it before a tap becomes a Click, so a forged or
// garbled value (invalid UTF-8 included) never reaches a message id or
// the store.
func ValidClick(card, action string) bool {
	return asciiWord(card, MaxCardIDLen) && asciiWord(action, MaxActionLen)
}

func asciiWord(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Click is a tap on a card's button, handed to Sink.Accept in an Inbound
// of MsgType TypeClick. The channel fills it only from a callback it
// verified as the platform defines; Card and Action are what the button
// carried (untrusted values: the gateway looks the card up and checks
// them), By is the clicker's platform id from the verified callback
// (Feishu: operator.open_id), never a value carried in the card.
type Click struct {
	Card   string // the card id the button carried
	Action string // ActionConfirm, ActionCancel or an option's number
	By     string // the verified clicker, as Carder.ClickRef names the asker
}

// Card outcomes: what Sink.Accept did with a click (Receipt.Card).
const (
	CardClaimed  = "claimed"   // the tap was taken: the run goes on
	CardNotYours = "not_yours" // someone other than the asker tapped: nothing changed
	CardExpired  = "expired"   // too late: nothing runs
	CardSettled  = "settled"   // answered before (a double tap, a redelivery, a typed answer)
	CardUnknown  = "unknown"   // no such card on this account
)

// CardAnswer is what a channel answers a click with, within the platform's
// deadline: the card redrawn in its new state (Card, for the clicker's view
// or everyone's where the platform allows) and a short private note
// (Toast) where the platform can show one. Words are the gateway's.
type CardAnswer struct {
	Outcome string // one of the Card* outcomes
	Toast   string // a private note to the clicker; "" for none
	// Card is the card as it looks now (no live buttons once claimed);
	// nil: leave it as it is (someone else's tap, an unknown card).
	Card *Card
}

// Card is an interactive card: a title, a markdown body and buttons. Each
// button carries only ID and its Action.
type Card struct {
	ID      string
	Title   string
	Text    string
	Buttons []Button // none: a settled card
	// MessageID is the platform's id of the card once sent (for an update).
	MessageID string
}

// Button is one button of a card.
type Button struct {
	Action  string `json:"a"`
	Label   string `json:"label"`
	Primary bool   `json:"primary,omitempty"`
}

// Carder is a channel that can show cards with buttons and take their
// taps as verified callbacks. Where it cannot (Buttons is 0, or SendCard
// fails) the gateway falls back to the text confirmation.
type Carder interface {
	// CardButtons is how many buttons a card of account's may carry (the
	// platform's limit); 0: no cards on this account.
	CardButtons(account string) int
	// ClickRef is the platform id a tap by the asker of the message at
	// replyTo carries in Click.By (Feishu: the asker's open_id); "" when it
	// cannot tell, and then no card is sent.
	ClickRef(account string, replyTo json.RawMessage) string
	// SendCard sends card in reply to out.ReplyTo (out.Text is its body).
	// Errors wrap ErrPermanent when no retry helps (a missing permission,
	// a card the platform refuses).
	SendCard(ctx context.Context, out Outbound, card Card) (SendResult, error)
	// UpdateCard redraws the card sent as card.MessageID for everyone who
	// sees it. Errors wrap ErrPermanent when no retry helps.
	UpdateCard(ctx context.Context, account string, card Card) error
}
