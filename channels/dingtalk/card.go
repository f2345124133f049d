package dingtalk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hermes-gw/hermes/channels"
)

// cardPermission is what the AI card APIs need, as the console names it.
const cardPermission = "AI卡片流式更新权限 (Card.Streaming.Write) 与 互动卡片实例写权限 (Card.Instance.Write)"

// The live reply of a robot with an AI card template: a card created and
// delivered to the chat when the message is stored, then streamed into
// (the whole text so far) every card_interval, until the final reply's
// first part finishes it. The gateway drives it (channels.RunLive); when
// the card cannot be created or updated, the answer goes as a markdown
// message (send.go).

var _ channels.LiveReplier = (*Channel)(nil)

// Open creates the AI card of the message out.ReplyTo names and delivers
// it to the chat, showing out.Text.
//
// Errors: the robot has no card template or ReplyTo no card (wrapping
// channels.ErrPermanent), or DingTalk refused the card (a missing
// permission is also logged, naming it).
func (c *Channel) Open(ctx context.Context, out channels.Outbound) (channels.Live, error) {
	r, ok := c.robots[out.Account]
	if !ok || r.cfg.CardTemplateID == "" {
		return nil, fmt.Errorf("dingtalk: account %q has no AI card: %w", out.Account, channels.ErrPermanent)
	}
	var rt replyTo
	if err := json.Unmarshal(out.ReplyTo, &rt); err != nil || rt.Card == "" {
		return nil, fmt.Errorf("dingtalk: robot %q: reply address %s names no card: %w", r.cfg.Name, out.ReplyTo, channels.ErrPermanent)
	}
	if err := r.createCard(ctx, rt, out.Text); err != nil {
		r.api.permissionHint(err, cardPermission)
		return nil, err
	}
	return &cardLive{r: r, rt: rt}, nil
}

// cardLive is one AI card being streamed into.
type cardLive struct {
	r  *robot
	rt replyTo
}

// Update streams soFar into the card (its beginning, if it is longer than
// a message).
func (l *cardLive) Update(ctx context.Context, soFar string) error {
	return l.r.updateCard(ctx, l.rt, channels.TruncateUTF8(soFar, MaxMarkdownBytes), false)
}

// Finish shows the final reply's first part and ends the stream.
func (l *cardLive) Finish(ctx context.Context, final channels.Outbound) (channels.SendResult, error) {
	return channels.SendResult{}, l.r.updateCard(ctx, l.rt, final.Text, true)
}

// Abandon ends the stream showing text: a card left "thinking" would look
// stuck.
func (l *cardLive) Abandon(ctx context.Context, text string) error {
	return l.r.updateCard(ctx, l.rt, channels.TruncateUTF8(text, MaxMarkdownBytes), true)
}

// cardRequest is the body of card/instances/createAndDeliver for an AI
// card in a group (IM_GROUP) or a robot's single chat (IM_ROBOT).
type cardRequest struct {
	CardTemplateID string `json:"cardTemplateId"`
	OutTrackID     string `json:"outTrackId"`
	CallbackType   string `json:"callbackType"`
	CardData       struct {
		CardParamMap map[string]string `json:"cardParamMap"`
	} `json:"cardData"`
	OpenSpaceID             string         `json:"openSpaceId"`
	UserIDType              int            `json:"userIdType"`
	ImGroupOpenSpaceModel   map[string]any `json:"imGroupOpenSpaceModel,omitempty"`
	ImGroupOpenDeliverModel map[string]any `json:"imGroupOpenDeliverModel,omitempty"`
	ImRobotOpenSpaceModel   map[string]any `json:"imRobotOpenSpaceModel,omitempty"`
	ImRobotOpenDeliverModel map[string]any `json:"imRobotOpenDeliverModel,omitempty"`
}

// createCard creates the answer's AI card and delivers it to the chat,
// showing text (messages.thinking) until the first draft.
func (r *robot) createCard(ctx context.Context, rt replyTo, text string) error {
	req := cardRequest{CardTemplateID: r.cfg.CardTemplateID, OutTrackID: rt.Card, CallbackType: "STREAM", UserIDType: 1}
	req.CardData.CardParamMap = map[string]string{r.cfg.CardContentKey: text}
	r.addressCard(&req, rt, true)
	if err := r.api.call(ctx, http.MethodPost, "/v1.0/card/instances/createAndDeliver", req, nil); err != nil {
		return fmt.Errorf("dingtalk: robot %q: create card: %w", r.cfg.Name, err)
	}
	return nil
}

// updateCard streams the whole text so far into the card; final ends the
// stream.
func (r *robot) updateCard(ctx context.Context, rt replyTo, text string, final bool) error {
	body := map[string]any{
		"outTrackId": rt.Card, "guid": fmt.Sprintf("%s-%d", rt.Card, r.now().UnixNano()),
		"key": r.cfg.CardContentKey, "content": text, "isFull": true, "isFinalize": final, "isError": false,
	}
	if err := r.api.call(ctx, http.MethodPut, "/v1.0/card/streaming", body, nil); err != nil {
		return fmt.Errorf("dingtalk: robot %q: stream card: %w", r.cfg.Name, err)
	}
	return nil
}
