package feishu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hermes-gw/hermes/channels"
)

// Send replies to the message in out.ReplyTo with one part: a post with a
// markdown element (FormatMarkdown) or a text message, the asker mentioned
// in group chats on the first part; or an image (FormatImage, media.go).
// Each part carries a uuid derived from
// out.Key, so Feishu drops a repeat of the same part within an hour (an
// attempt whose answer was lost). (The delivery layer holds back a first
// part the message's streaming card may still show: stream.go.)
//
// Errors wrap channels.ErrPermanent for a reply address or part that cannot
// be sent and for codes no retry fixes (bot not in the chat, missing
// scope); they wrap *APIError when Feishu answered.
func (a *App) Send(ctx context.Context, out channels.Outbound) (channels.SendResult, error) {
	rt, err := a.replyAddress(out.ReplyTo)
	if err != nil {
		return channels.SendResult{}, err
	}
	if out.Format == channels.FormatImage {
		return a.sendImage(ctx, out, rt)
	}
	if strings.TrimSpace(out.Text) == "" {
		return channels.SendResult{}, fmt.Errorf("feishu: app %q: empty part: %w", a.cfg.Name, channels.ErrPermanent)
	}
	msgType, content := messageContent(out.Format, out.Text, mentionOf(rt, out.Part))
	id, err := a.post(ctx, rt, msgType, content, replyUUID(out.Key))
	if err != nil {
		a.alert(err)
		return channels.SendResult{}, fmt.Errorf("feishu: app %q: send to %s%s: %w", a.cfg.Name, rt.MessageID, rt.ChatID, err)
	}
	return channels.SendResult{MessageID: id}, nil
}

// replyAddress reads a reply address (Outbound.ReplyTo). Errors wrap
// channels.ErrPermanent: an address that names nothing to send to.
func (a *App) replyAddress(raw json.RawMessage) (replyTo, error) {
	var rt replyTo
	if err := json.Unmarshal(raw, &rt); err != nil || (rt.MessageID == "" && rt.ReceiveIDType == "") {
		return rt, fmt.Errorf("feishu: app %q: bad reply address %s: %w", a.cfg.Name, raw, channels.ErrPermanent)
	}
	return rt, nil
}

// mentionOf is the open_id to mention: the asker, on a group reply's first
// part.
func mentionOf(rt replyTo, part int) string {
	if rt.Group && part == 0 {
		return rt.OpenID
	}
	return ""
}

// messageContent builds msg_type and content (a JSON string) of a part.
func messageContent(format, text, mentionOpenID string) (string, string) {
	at := ""
	if mentionOpenID != "" {
		at = `<at user_id="` + mentionOpenID + `"></at> `
	}
	if format == channels.FormatText {
		b, _ := marshalJSON(map[string]string{"text": at + text})
		return "text", string(b)
	}
	post := map[string]any{"zh_cn": map[string]any{
		"content": [][]map[string]string{{{"tag": "md", "text": at + text}}},
	}}
	b, _ := marshalJSON(post) // strings and maps always marshal
	return "post", string(b)
}

// replyUUID is the reply's duplicate-suppression id: the same part, on
// every attempt and replica, gets the same one.
func replyUUID(key string) string {
	sum := sha256.Sum256([]byte("hermes-feishu-reply:" + key))
	return hex.EncodeToString(sum[:16]) // 32 characters, under MaxReplyUUID
}

// post sends a message to rt and returns the new message's id: a reply
// (im/v1/messages/:message_id/reply) to the message rt came from, or, for
// a push with no message to reply to (a report), a new message in the chat
// (im/v1/messages?receive_id_type=...).
func (a *App) post(ctx context.Context, rt replyTo, msgType, content, uuid string) (string, error) {
	var out struct {
		Data struct {
			MessageID string `json:"message_id"`
		} `json:"data"`
	}
	body := map[string]string{"msg_type": msgType, "content": content}
	if uuid != "" {
		body["uuid"] = uuid
	}
	if rt.MessageID == "" {
		body["receive_id"] = rt.ChatID
		err := a.api.call(ctx, "im/v1/messages", http.MethodPost, "/open-apis/im/v1/messages",
			url.Values{"receive_id_type": {rt.ReceiveIDType}}, body, &out)
		return out.Data.MessageID, err
	}
	err := a.api.call(ctx, "im/v1/messages/reply", http.MethodPost,
		"/open-apis/im/v1/messages/"+pathEscape(rt.MessageID)+"/reply", nil, body, &out)
	return out.Data.MessageID, err
}

// alert logs, once per failure, the codes an operator must act on.
func (a *App) alert(err error) {
	e := apiErrorOf(err)
	if e == nil {
		return
	}
	if info := lookupCode(e.Code); info.hint != "" {
		a.log.Error("feishu: "+info.what+": "+info.hint, "op", e.Op, "code", e.Code, "msg", e.Msg)
	}
}
