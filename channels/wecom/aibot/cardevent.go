package aibot

import (
	"context"
	"regexp"
	"strings"

	"github.com/hermes-gw/hermes/channels"
)

// botEventCard is the event of a tap on a template card's button (接收事件,
// doc 101027): on the callback URL, encrypted and signed as every
// callback; on the long connection, an aibot_event_callback frame. WeCom
// sends it once and wants the answer within 5 s.
const botEventCard = "template_card_event"

// templateCardEvent is event.template_card_event: which card (task_id)
// and which button (event_key) was tapped.
type templateCardEvent struct {
	CardType string `json:"card_type"`
	EventKey string `json:"event_key"`
	TaskID   string `json:"task_id"`
}

// actionPattern is the action a smart robot's Hermes button carries back
// (buttonKey): "ok", "no" or an option's number; its card id is checked
// by channels.ValidClick. A key of another shape is not a Hermes button:
// a settled card's, or another program's card on the same bot.
var actionPattern = regexp.MustCompile(`^(ok|no|[1-9][0-9]?)$`)

// clickOf is the tap of a verified template_card_event: the card and
// action its button carried (untrusted until the gateway finds them) and
// the clicker, from.userid, the only identity taken. ok is false for a
// tap on no Hermes button (a settled card's, an unknown key, a task_id
// that is not the key's card): it is answered with nothing and nothing is
// stored.
func clickOf(m *botMessage) (click channels.Click, ok bool) {
	if m.eventType() != botEventCard || m.Event.TemplateCard == nil || m.From.UserID == "" {
		return click, false
	}
	ev := m.Event.TemplateCard
	cardID, action, found := strings.Cut(ev.EventKey, ":")
	if !found || !channels.ValidClick(cardID, action) || !actionPattern.MatchString(action) || ev.TaskID != taskID(cardID) {
		return click, false
	}
	return channels.Click{Card: cardID, Action: action, By: m.From.UserID}, true
}

// acceptClick hands a tap to the sink and returns how to answer it: the
// card as it now is, redrawn for everyone who sees it; nil for no answer
// (someone other than the asker tapped, which WeCom shows no note for and
// which changes nothing; a tap on no Hermes button; an unknown card).
//
// The tap's Inbound is the message's (inbound: from.userid, chat, the
// tap's own response_url and req_id as its reply address, where the run's
// answer goes), with MsgType channels.TypeClick and the Click; its MsgID
// is the event's msgid, WeCom's dedupe key.
//
// Errors wrap wxbiz.ErrMalformed or channels.ErrUnavailable (nothing was
// stored: WeCom does not send the tap again, the asker taps again or
// types 「确认」).
func (b *Bot) acceptClick(ctx context.Context, sink channels.Sink, m *botMessage, plain []byte, reqID string) (*cardUpdate, error) {
	in, ok, err := b.tapInbound(m, plain, reqID)
	if err != nil || !ok {
		return nil, err
	}
	rc, err := sink.Accept(ctx, in)
	if err != nil {
		return nil, unavailable("accept tap", err)
	}
	return answerOf(rc.Card), nil
}

// tapInbound is the Inbound of a tap (see acceptClick); ok is false for
// a tap on no Hermes button, which is dropped. Errors wrap
// wxbiz.ErrMalformed.
func (b *Bot) tapInbound(m *botMessage, plain []byte, reqID string) (in channels.Inbound, ok bool, err error) {
	click, ok := clickOf(m)
	if !ok {
		b.log.Debug("wecom bot: ignoring a tap on no Hermes button", "msg_id", m.MsgID)
		return in, false, nil
	}
	if in, err = b.inbound(m, plain, reqID); err != nil {
		return in, false, err
	}
	in.MsgType, in.Click = channels.TypeClick, &click
	return in, true, nil
}

// answerOf is the update that answers a tap the sink took as ans: the
// card redrawn for everyone, or nil (no answer: no change) where ans has
// no card. WeCom shows no private note, so Toast is not shown; the card's
// title says what happened.
func answerOf(ans *channels.CardAnswer) *cardUpdate {
	if ans == nil || ans.Card == nil {
		return nil
	}
	return &cardUpdate{ResponseType: responseUpdateCard, TemplateCard: cardOf(*ans.Card)}
}
