package dingtalk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"

	"github.com/hermes-gw/hermes/channels"
)

// Confirmation and choice cards: a template card (卡片平台) created and
// delivered with POST /v1.0/card/instances/createAndDeliver, its taps
// arriving over the Stream connection (cardcallback.go), redrawn later for
// everyone with PUT /v1.0/card/instances. Buttons, options and states are
// the template's: Hermes fills its variables (cardParams), all strings, as
// DingTalk's cardParamMap takes only strings (alibabacloud-go/dingtalk
// card_1_0 CreateCardRequest; cards.md trap 9).

// MaxCardButtons is how many buttons a Hermes card carries on DingTalk.
// DingTalk sets no number (the template lays them out); five fit a phone's
// width in one row of the template the README describes, as on Feishu.
const MaxCardButtons = 5

// cardTrackPrefix starts the outTrackId of a confirmation or choice card:
// "hermes-card-<card id>". A tap names the card by outTrackId, so the
// card id is DingTalk's record of which card was tapped, not a value the
// button carries; the AI card's outTrackIds ("hermes-<hex>") never match.
const cardTrackPrefix = "hermes-card-"

// The button template's variables (README, "Confirmation and choice
// cards"): public data every viewer sees, and note, the tapper's private
// data.
const (
	cardVarTitle   = "title"   // the card's title
	cardVarBody    = "body"    // markdown: the question, masked like any reply
	cardVarStatus  = "status"  // cardStatusPending shows the buttons; anything else hides them
	cardVarButtons = "buttons" // a JSON array of {"label","action","primary"}, looped over by the template
	cardVarNote    = "note"    // private to the tapper: what happened to the tap
)

// Values of cardVarStatus. Template conditions compare exact strings
// (cards.md trap 9).
const (
	cardStatusPending = "pending"
	cardStatusDone    = "done"
)

// cardInstancePermission is what createAndDeliver and card/instances
// need, as the console names it.
const cardInstancePermission = "互动卡片实例写权限 (Card.Instance.Write)"

// templateIDPattern is what 卡片平台's template ids look like
// ("db56f2c2-f609-4878-9a34-46f6a0194a73.schema" in open-dingtalk's
// examples): a bad value is refused at start, naming the key, rather than
// found by the first confirmation.
var templateIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,120}\.schema$`)

func validTemplateID(id string) bool { return templateIDPattern.MatchString(id) }

var _ channels.Carder = (*Channel)(nil)

// CardButtons is MaxCardButtons for a stream-mode robot with a
// button_card_template_id, else 0 (the text confirmation).
func (c *Channel) CardButtons(account string) int {
	if r, ok := c.robots[account]; ok && r.cardsOn() {
		return MaxCardButtons
	}
	return 0
}

// cardsOn: the robot sends button cards (a button_card_template_id). Its
// taps always come over a Stream connection, whose socket the app's
// credentials opened: no official source says how DingTalk authenticates
// an HTTP card callback (the apiSecret of /v1.0/card/callbacks/register:
// alibabacloud-go/dingtalk card_1_0 RegisterCallbackRequest gives the
// field, open-dingtalk's SDKs and dingtalk-card-examples only the Stream
// path), so a robot in http mode opens a Stream connection that takes
// only the card topic (stream.go subscriptions); its messages still come
// over HTTP.
func (r *robot) cardsOn() bool {
	return r.cfg.ButtonCardTemplateID != ""
}

// ClickRef is the asker's staffId: a tap's callback names the tapper by
// userId, a staffId for a card created with userIdType 1 (dingtalk-stream-
// sdk-go card.CardRequest).
func (c *Channel) ClickRef(_ string, address json.RawMessage) string {
	var rt replyTo
	if json.Unmarshal(address, &rt) != nil {
		return ""
	}
	return rt.User
}

// SendCard creates card from the robot's button template and delivers it
// to out.ReplyTo's chat (the asker @-mentioned in a group), with its taps
// called back over the Stream connection. Its MessageID is the card's
// outTrackId, which UpdateCard redraws.
//
// Errors wrap channels.ErrPermanent for a robot without cards, a bad reply
// address, a refusal no retry fixes (a missing permission, a template
// DingTalk does not know, a chat the card could not be delivered to),
// *APIError when DingTalk answered.
func (c *Channel) SendCard(ctx context.Context, out channels.Outbound, card channels.Card) (channels.SendResult, error) {
	r, ok := c.robots[out.Account]
	if !ok || !r.cardsOn() {
		return channels.SendResult{}, fmt.Errorf("dingtalk: account %q shows no button cards: %w", out.Account, channels.ErrPermanent)
	}
	var rt replyTo
	if err := json.Unmarshal(out.ReplyTo, &rt); err != nil || rt.User == "" || (rt.Group && rt.Conversation == "") {
		return channels.SendResult{}, fmt.Errorf("dingtalk: robot %q: reply address %s: %w", r.cfg.Name, out.ReplyTo, channels.ErrPermanent)
	}
	track := cardTrackPrefix + card.ID
	req := cardRequest{CardTemplateID: r.cfg.ButtonCardTemplateID, OutTrackID: track, CallbackType: "STREAM", UserIDType: 1}
	req.CardData.CardParamMap = cardParams(card)
	r.addressCard(&req, rt, false) // a forwarded copy's taps would all be someone else's
	var ans struct {
		Result struct {
			DeliverResults []struct {
				SpaceID  string `json:"spaceId"`
				Success  bool   `json:"success"`
				ErrorMsg string `json:"errorMsg"`
			} `json:"deliverResults"`
		} `json:"result"`
	}
	if err := r.api.call(ctx, http.MethodPost, "/v1.0/card/instances/createAndDeliver", req, &ans); err != nil {
		r.api.permissionHint(err, cardInstancePermission)
		return channels.SendResult{}, fmt.Errorf("dingtalk: robot %q: card %s: %w", r.cfg.Name, track, classify(err))
	}
	for _, d := range ans.Result.DeliverResults {
		if !d.Success {
			// Created but not delivered (the robot left the group, the user
			// cannot see the app): a retry delivers nothing either.
			return channels.SendResult{}, fmt.Errorf("dingtalk: robot %q: card %s not delivered to %s: %s: %w",
				r.cfg.Name, track, d.SpaceID, d.ErrorMsg, channels.ErrPermanent)
		}
	}
	return channels.SendResult{MessageID: track}, nil
}

// UpdateCard redraws the card sent as card.MessageID (its outTrackId) for
// everyone: PUT /v1.0/card/instances with the public variables only
// (updateCardDataByKey keeps the others, python SDK put_card_data).
//
// Errors wrap channels.ErrPermanent for refusals no retry fixes.
func (c *Channel) UpdateCard(ctx context.Context, account string, card channels.Card) error {
	r, ok := c.robots[account]
	if !ok {
		return fmt.Errorf("dingtalk: unknown account %q: %w", account, channels.ErrPermanent)
	}
	body := map[string]any{
		"outTrackId":        card.MessageID,
		"cardData":          map[string]any{"cardParamMap": cardParams(card)},
		"cardUpdateOptions": map[string]bool{"updateCardDataByKey": true},
		"userIdType":        1,
	}
	if err := r.api.call(ctx, http.MethodPut, "/v1.0/card/instances", body, nil); err != nil {
		r.api.permissionHint(err, cardInstancePermission)
		return fmt.Errorf("dingtalk: robot %q: update card %s: %w", r.cfg.Name, card.MessageID, classify(err))
	}
	return nil
}

// cardButton is one element of the buttons variable. primary is a string:
// a template condition compares strings.
type cardButton struct {
	Label   string `json:"label"`
	Action  string `json:"action"`
	Primary string `json:"primary"`
}

// cardParams are card's public variables: its buttons live while it has
// any, and the status that hides them once it is settled.
func cardParams(card channels.Card) map[string]string {
	buttons := make([]cardButton, 0, len(card.Buttons))
	for _, b := range card.Buttons {
		buttons = append(buttons, cardButton{Label: b.Label, Action: b.Action, Primary: fmt.Sprint(b.Primary)})
	}
	list, _ := json.Marshal(buttons) // strings only: always marshals
	status := cardStatusPending
	if len(card.Buttons) == 0 {
		status = cardStatusDone
	}
	return map[string]string{
		cardVarTitle: card.Title, cardVarBody: card.Text, cardVarStatus: status, cardVarButtons: string(list),
	}
}

// addressCard sets req's space and delivery to rt's chat: the group, the
// asker @-mentioned, or the robot's single chat with the asker; forward
// lets the card be forwarded.
func (r *robot) addressCard(req *cardRequest, rt replyTo, forward bool) {
	if rt.Group {
		req.OpenSpaceID = "dtv1.card//IM_GROUP." + rt.Conversation
		req.ImGroupOpenSpaceModel = map[string]any{"supportForward": forward}
		req.ImGroupOpenDeliverModel = map[string]any{"robotCode": r.cfg.RobotCode, "atUserIds": map[string]string{rt.User: rt.Nick}}
		return
	}
	req.OpenSpaceID = "dtv1.card//IM_ROBOT." + rt.User
	req.ImRobotOpenSpaceModel = map[string]any{"supportForward": forward}
	req.ImRobotOpenDeliverModel = map[string]any{"spaceType": "IM_ROBOT", "robotCode": r.cfg.RobotCode}
}
