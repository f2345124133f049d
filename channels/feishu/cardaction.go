package feishu

import (
	"encoding/json"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

// EventCardAction is the callback of a tap on a card's button (卡片回传交互),
// subscribed under 事件与回调 → 回调配置; it comes in the v2 envelope over
// both the long connection (a frame of type "event") and HTTP (encrypted
// and signed like any event).
const EventCardAction = "card.action.trigger"

// cardAction is card.action.trigger's event (oapi-sdk-go
// event/dispatcher/callback/model.go).
type cardAction struct {
	Operator struct {
		OpenID    string `json:"open_id"`
		UserID    string `json:"user_id"`
		UnionID   string `json:"union_id"`
		TenantKey string `json:"tenant_key"`
	} `json:"operator"`
	Token  string `json:"token"`
	Action struct {
		Tag   string          `json:"tag"`
		Value json.RawMessage `json:"value"`
	} `json:"action"`
	Context struct {
		OpenMessageID string `json:"open_message_id"`
		OpenChatID    string `json:"open_chat_id"`
	} `json:"context"`
}

// decodeCardAction turns a verified card.action.trigger into a click
// Inbound: the clicker is operator.open_id (the one id Feishu always
// gives; the gateway matches it against the asker's, ClickRef), the card
// and action are what the button carried, untrusted until the gateway
// finds them. MsgID is the event id, Feishu's dedupe key for callbacks.
// ok is false for a tap on a button that is not a Hermes one: it is
// answered {} and nothing is stored.
//
// Errors wrap ErrMalformed.
func (a *App) decodeCardAction(ev eventV2, plain []byte) (in channels.Inbound, ok bool, err error) {
	var ca cardAction
	if err := json.Unmarshal(ev.Event, &ca); err != nil {
		return in, false, fmt.Errorf("%w: %s: %v", ErrMalformed, EventCardAction, err)
	}
	if ca.Operator.OpenID == "" || ev.Header.EventID == "" {
		return in, false, fmt.Errorf("%w: %s without operator open_id or event_id", ErrMalformed, EventCardAction)
	}
	var v buttonValue
	if json.Unmarshal(ca.Action.Value, &v) != nil || !channels.ValidClick(v.Card, v.Action) {
		return in, false, nil
	}
	tenant := ev.Header.TenantKey
	if tenant == "" {
		tenant = ca.Operator.TenantKey
	}
	in = channels.Inbound{
		Channel: ChannelName, Account: a.cfg.Name, MsgID: ev.Header.EventID, MsgType: channels.TypeClick,
		ChatID: ca.Context.OpenChatID, Sender: channels.Identity{UserID: ca.Operator.OpenID, CorpID: tenant},
		Click: &channels.Click{Card: v.Card, Action: v.Action, By: ca.Operator.OpenID},
		Raw:   json.RawMessage(plain),
	}
	return in, true, nil
}

// cardAnswer is the body that answers a card.action.trigger (within
// CallbackDeadline): a toast for the clicker and the card redrawn, as
// CardActionTriggerResponse has them; {} changes nothing.
func cardAnswer(ans *channels.CardAnswer) []byte {
	out := map[string]any{}
	if ans != nil {
		if ans.Toast != "" {
			out["toast"] = map[string]string{"type": toastTypes[ans.Outcome], "content": ans.Toast}
		}
		if ans.Card != nil {
			out["card"] = map[string]any{"type": "raw", "data": json.RawMessage(cardJSON(*ans.Card))}
		}
	}
	b, _ := marshalJSON(out) // maps of strings and raw JSON always marshal
	return b
}

// toastTypes are the toast's look per outcome (success, info, warning, error).
var toastTypes = map[string]string{
	channels.CardClaimed:  "success",
	channels.CardSettled:  "info",
	channels.CardExpired:  "warning",
	channels.CardNotYours: "warning",
	channels.CardUnknown:  "info",
}
