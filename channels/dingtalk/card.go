package dingtalk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
)

// cardPermission is what the AI card APIs need, as the console names it.
const cardPermission = "AI卡片流式更新权限 (Card.Streaming.Write) 与 互动卡片实例写权限 (Card.Instance.Write)"

// finishTimeout bounds the last card update after the stream deadline.
const finishTimeout = 5 * time.Second

// streamAnswer shows the answer to in as it grows, in an AI card: it
// creates and delivers the card, then polls sink.Progress every
// CardInterval and streams the whole text so far, until the final reply's
// first part is there; it then finishes the card and calls sink.Shown. If
// the card cannot be created or updated, the first part goes out as a
// markdown message instead (then Shown too). At the stream deadline it
// gives up without Shown: the delivery layer sends the first part.
func (r *robot) streamAnswer(ctx context.Context, sink channels.Sink, in channels.Inbound) {
	var rt replyTo
	if err := json.Unmarshal(in.ReplyTo, &rt); err != nil || rt.Card == "" {
		return
	}
	// The deadline counts on the injected clock; the timer runs on the
	// real one.
	ctx, cancel := context.WithTimeout(ctx, rt.received().Add(r.cfg.StreamDeadline).Sub(r.now()))
	defer cancel()
	ref := channels.MessageRef{Channel: ChannelName, Account: r.cfg.Name, MsgID: in.MsgID}
	log := r.log.With("msg_id", in.MsgID, "card", rt.Card)

	cardOK := true
	if err := r.createCard(ctx, rt); err != nil {
		r.api.permissionHint(err, cardPermission)
		log.Warn("AI card not created; the answer comes as markdown", "err", err)
		cardOK = false
	}
	shown := ""
	tick := time.NewTicker(r.cfg.CardInterval)
	defer tick.Stop()
	for {
		p, err := sink.Progress(ctx, ref)
		switch {
		case err != nil:
			log.Debug("progress unavailable", "err", err)
		case !p.Known || p.Shown:
			return
		case p.Done:
			r.finish(ctx, sink, ref, rt, p.Text, cardOK, log)
			return
		case cardOK && p.Text != "" && p.Text != shown:
			if err := r.updateCard(ctx, rt, cutUTF8(p.Text, MaxMarkdownBytes), false); err != nil {
				log.Warn("AI card update failed; the answer comes as markdown", "err", err)
				cardOK = false
			}
			shown = p.Text
		}
		select {
		case <-ctx.Done():
			if cardOK {
				// Close the card with what it shows and say the rest follows
				// (a card left "thinking" would look stuck); the delivery
				// layer now sends the answer as a message.
				text := r.msgs.Later
				if shown != "" {
					text = shown + "\n\n" + text
				}
				fctx, stop := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
				_ = r.updateCard(fctx, rt, cutUTF8(text, MaxMarkdownBytes), true)
				stop()
			}
			log.Info("AI card stream reached its deadline; the answer goes as a message")
			return
		case <-tick.C:
		}
	}
}

// finish shows the final first part (in the card, else as a message) and
// records that it was shown.
func (r *robot) finish(ctx context.Context, sink channels.Sink, ref channels.MessageRef, rt replyTo, text string, cardOK bool, log *slog.Logger) {
	if cardOK {
		if err := r.updateCard(ctx, rt, text, true); err != nil {
			log.Warn("AI card final update failed; the answer comes as markdown", "err", err)
			cardOK = false
		}
	}
	if !cardOK {
		if err := r.deliver(ctx, rt, text, true); err != nil {
			log.Warn("first part not sent from the stream; the delivery layer sends it", "err", err)
			return
		}
	}
	if err := sink.Shown(ctx, ref); err != nil {
		log.Warn("stream shown but not recorded; the first part may come again", "err", err)
	}
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
// showing messages.thinking until the first draft.
func (r *robot) createCard(ctx context.Context, rt replyTo) error {
	req := cardRequest{CardTemplateID: r.cfg.CardTemplateID, OutTrackID: rt.Card, CallbackType: "STREAM", UserIDType: 1}
	req.CardData.CardParamMap = map[string]string{r.cfg.CardContentKey: r.msgs.Thinking}
	if rt.Group {
		req.OpenSpaceID = "dtv1.card//IM_GROUP." + rt.Conversation
		req.ImGroupOpenSpaceModel = map[string]any{"supportForward": true}
		req.ImGroupOpenDeliverModel = map[string]any{"robotCode": r.cfg.RobotCode, "atUserIds": map[string]string{rt.User: rt.Nick}}
	} else {
		req.OpenSpaceID = "dtv1.card//IM_ROBOT." + rt.User
		req.ImRobotOpenSpaceModel = map[string]any{"supportForward": true}
		req.ImRobotOpenDeliverModel = map[string]any{"spaceType": "IM_ROBOT", "robotCode": r.cfg.RobotCode}
	}
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

// cutUTF8 cuts s to at most n bytes on a rune boundary (a draft longer than
// a message shows its beginning; the final text is already split).
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
