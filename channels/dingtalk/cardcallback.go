package dingtalk

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/hermes-gw/hermes/channels"
)

// cardTopic is the Stream topic of card callbacks (dingtalk-stream-sdk-go
// payload/utils.go CardInstanceCallbackTopic). DingTalk pushes a tap on
// it only to a connection that subscribed it when it was opened, and only
// for a card this app created with callbackType STREAM (cards.md trap 8).
const cardTopic = "/v1.0/card/instances/callback"

// cardCallback is a card callback frame's data (dingtalk-stream-sdk-go
// card/model.go CardRequest; dingtalk-stream-sdk-python card_callback.py).
type cardCallback struct {
	Type       string `json:"type"` // "actionCallback"
	OutTrackID string `json:"outTrackId"`
	UserID     string `json:"userId"`     // the tapper
	UserIDType int    `json:"userIdType"` // 1: userId is a staffId
	CorpID     string `json:"corpId"`
	SpaceType  string `json:"spaceType"` // IM_GROUP, IM_ROBOT
	SpaceID    string `json:"spaceId"`
	// Content is a JSON string: {"cardPrivateData":{"actionIds":[…],
	// "params":{…}}}, the tapped component's action id and the params its
	// 回传请求 was built with in 卡片平台.
	Content string `json:"content"`
}

// cardContent is a callback's Content, decoded.
type cardContent struct {
	CardPrivateData struct {
		ActionIDs []string       `json:"actionIds"`
		Params    map[string]any `json:"params"`
	} `json:"cardPrivateData"`
}

// userIDTypeStaff: the callback's userId is a staffId (userid), as asked
// with userIdType 1 when the card was created.
const userIDTypeStaff = 1

// decodeCardCallback turns a card callback frame's data (over the app's
// authenticated Stream connection) into a click Inbound: the tapper is
// userId, a staffId of the robot's corp (a corpId naming another corp is
// refused, as for messages); the card is the one the outTrackId names;
// the action is the button's action param (open-dingtalk's
// dingtalk-card-examples read params["action"]), else its action id. ok
// is false for a tap Hermes did not ask for (another card of the app,
// such as the AI card; a component that is not a Hermes button): it is
// answered {"response":{}} and nothing is stored.
//
// Errors wrap ErrMalformed or ErrCorp.
func (r *robot) decodeCardCallback(data []byte) (in channels.Inbound, ok bool, err error) {
	var cb cardCallback
	if err := json.Unmarshal(data, &cb); err != nil {
		return in, false, fmt.Errorf("%w: card callback: %v", ErrMalformed, err)
	}
	if cb.OutTrackID == "" || cb.UserID == "" {
		return in, false, fmt.Errorf("%w: card callback without outTrackId or userId", ErrMalformed)
	}
	if cb.CorpID != "" && cb.CorpID != r.cfg.CorpID {
		return in, false, fmt.Errorf("%w: card callback corpId %q is not corp_id %q", ErrCorp, cb.CorpID, r.cfg.CorpID)
	}
	id, hermes := strings.CutPrefix(cb.OutTrackID, cardTrackPrefix)
	if !hermes || (cb.UserIDType != 0 && cb.UserIDType != userIDTypeStaff) {
		return in, false, nil
	}
	var content cardContent
	if json.Unmarshal([]byte(cb.Content), &content) != nil {
		return in, false, nil
	}
	action, _ := content.CardPrivateData.Params["action"].(string)
	if action == "" && len(content.CardPrivateData.ActionIDs) > 0 {
		action = content.CardPrivateData.ActionIDs[0]
	}
	if !channels.ValidClick(id, action) {
		return in, false, nil
	}
	in = channels.Inbound{
		Channel: ChannelName, Account: r.cfg.Name, MsgType: channels.TypeClick,
		// A tap has no event id: the card, the tapper and the action are
		// DingTalk's own key for it (cards.md).
		MsgID:  cb.OutTrackID + "/" + cb.UserID + "/" + action,
		ChatID: cb.SpaceID, ChatType: channels.ChatSingle,
		Sender: channels.Identity{UserID: cb.UserID, CorpID: r.cfg.CorpID},
		Click:  &channels.Click{Card: id, Action: action, By: cb.UserID},
		Raw:    json.RawMessage(data),
	}
	if cb.SpaceType == "IM_GROUP" {
		in.ChatType = channels.ChatGroup
	}
	return in, true, nil
}

// cardAnswer is the ack data that answers a tap, within the frame's
// deadline: {"response":{…}} (dingtalk-stream-sdk-go card.
// DefaultCardCallbackFrameHandler). DingTalk applies an answer's cardData
// for everyone, so only a tap that changed the card's state (claimed, or
// expired) redraws it; a repeated tap gets the toast alone, as the
// tapper's private note (userPrivateData, as the Go SDK and open-dingtalk's
// examples send it; the python example's privateData{userId} is not used),
// or it would draw 已处理 over the outcome the card shows by then.
// Someone else's tap, an unknown card: {"response":{}}, nothing changes.
func cardAnswer(ans *channels.CardAnswer) []byte {
	resp := map[string]any{}
	if ans != nil && ans.Card != nil {
		resp["cardUpdateOptions"] = map[string]bool{"updateCardDataByKey": true, "updatePrivateDataByKey": true}
		if redraws[ans.Outcome] {
			resp["cardData"] = map[string]any{"cardParamMap": cardParams(*ans.Card)}
		}
		if ans.Toast != "" {
			resp["userPrivateData"] = map[string]any{"cardParamMap": map[string]string{cardVarNote: ans.Toast}}
		}
	}
	b, _ := json.Marshal(map[string]any{"response": resp}) // maps of strings always marshal
	return b
}

// redraws are the outcomes whose answer redraws the card for everyone:
// the tap changed its state.
var redraws = map[string]bool{channels.CardClaimed: true, channels.CardExpired: true}

// handleCard takes the card callback data of frame id: a Hermes tap goes
// to sink.Accept, and the frame is acked with the answer only after
// Accept committed; when nothing could be stored the frame is left
// unacked for DingTalk to push again. A callback that is refused (another
// corp, not JSON) is acked with {"response":{}} so it does not come back,
// and counted as a refused callback.
func (r *robot) handleCard(ctx context.Context, conn *websocket.Conn, id, data string, received time.Time, sink channels.Sink) {
	answer := cardAnswer(nil)
	in, ok, err := r.decodeCardCallback([]byte(data))
	switch {
	case err != nil:
		r.log.Warn("card callback refused", "message_id", id, "err", err)
		if check := channels.RefusalCheck(err); check != "" {
			sink.Refused(ctx, ChannelName, r.cfg.Name, check)
		}
	case ok:
		receipt, err := sink.Accept(ctx, in)
		if err != nil || ctx.Err() != nil {
			r.log.Warn("card tap not stored; left unacked for DingTalk to push again", "message_id", id, "err", err)
			return
		}
		answer = cardAnswer(receipt.Card)
	}
	if err := r.writeAck(ctx, conn, id, string(answer)); err != nil {
		r.log.Warn("card callback ack not sent; DingTalk will push the frame again", "message_id", id, "err", err)
		return
	}
	r.log.Debug("card callback acked", "message_id", id, "after", time.Since(received))
}
