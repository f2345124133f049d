package dingtalk

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
)

// robotSendPermission is the permission the robot OpenAPI needs, as the
// admin console names it.
const robotSendPermission = "企业内机器人发送消息权限 (qyapi_robot_sendmsg)"

// send delivers one part of a reply (the delivery layer holds back a first
// part the message's AI card may still show): through the session webhook
// while it is valid, else through the robot OpenAPI. Group replies mention
// the asker in their first part. An image is uploaded and sent through the
// OpenAPI (media.go).
//
// Errors wrap channels.ErrPermanent for a bad reply address, an
// empty or oversized text, and refusals retrying cannot fix (unknown user,
// missing permission); other errors (transport, throttling, DingTalk busy)
// are worth retrying. An expired token is refreshed and the call repeated
// once before send returns.
func (r *robot) send(ctx context.Context, out channels.Outbound) (channels.SendResult, error) {
	var rt replyTo
	if err := json.Unmarshal(out.ReplyTo, &rt); err != nil || (rt.User == "" && rt.Conversation == "") {
		return channels.SendResult{}, fmt.Errorf("dingtalk: robot %q: reply address %s: %w", r.cfg.Name, out.ReplyTo, channels.ErrPermanent)
	}
	if out.Format == channels.FormatImage {
		// Neither a card nor the session webhook shows an uploaded image:
		// it goes through the OpenAPI at once.
		return channels.SendResult{}, r.sendImage(ctx, rt, out)
	}
	switch {
	case strings.TrimSpace(out.Text) == "":
		return channels.SendResult{}, fmt.Errorf("dingtalk: robot %q: empty text: %w", r.cfg.Name, channels.ErrPermanent)
	case len(out.Text) > MaxMarkdownBytes:
		return channels.SendResult{}, fmt.Errorf("dingtalk: robot %q: %d bytes over DingTalk's %d: %w", r.cfg.Name, len(out.Text), MaxMarkdownBytes, channels.ErrPermanent)
	}
	if err := r.deliver(ctx, rt, out.Text, out.Part == 0); err != nil {
		return channels.SendResult{}, err
	}
	return channels.SendResult{}, nil
}

// deliver sends text as a markdown message to rt's conversation; mention
// asks for the asker to be @-mentioned in a group.
func (r *robot) deliver(ctx context.Context, rt replyTo, text string, mention bool) error {
	mention = mention && rt.Group && rt.User != ""
	title := titleOf(text, r.env.Messages.Title)
	if rt.Webhook != "" && r.now().Add(webhookExpiryMargin).UnixMilli() < rt.WebhookExpires {
		err := r.viaWebhook(ctx, rt, title, text, mention)
		// A webhook the guard refused got no request: the OpenAPI sends
		// the reply instead, once.
		if err == nil || !isAPIError(err) && !errors.Is(err, channels.ErrFetchRefused) {
			// Delivered, or unknown: a timed-out POST may have delivered, so
			// the retry goes the same way rather than doubling the message.
			return err
		}
		r.log.Warn("session webhook refused the reply; sending through the OpenAPI", "err", err)
	}
	return r.viaOpenAPI(ctx, rt, title, text, mention)
}

// webhookMessage is a session webhook's markdown message.
type webhookMessage struct {
	MsgType  string `json:"msgtype"`
	Markdown struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	} `json:"markdown"`
	At *struct {
		AtUserIDs []string `json:"atUserIds"`
	} `json:"at,omitempty"`
}

func (r *robot) viaWebhook(ctx context.Context, rt replyTo, title, text string, mention bool) error {
	m := webhookMessage{MsgType: "markdown"}
	m.Markdown.Title, m.Markdown.Text = title, text
	if mention {
		// DingTalk draws the mention only where the text names the user.
		m.Markdown.Text = withMention(rt.User, text)
		m.At = &struct {
			AtUserIDs []string `json:"atUserIds"`
		}{AtUserIDs: []string{rt.User}}
	}
	var ans struct {
		ErrCode int    `json:"errcode"`
		ErrMsg  string `json:"errmsg"`
	}
	if err := r.api.doWith(ctx, r.webhook, http.MethodPost, rt.Webhook, nil, m, &ans); err != nil {
		return fmt.Errorf("dingtalk: robot %q: session webhook: %w", r.cfg.Name, err)
	}
	if ans.ErrCode != 0 {
		return fmt.Errorf("dingtalk: robot %q: session webhook: %w", r.cfg.Name,
			&APIError{Status: http.StatusOK, Code: fmt.Sprint(ans.ErrCode), Message: ans.ErrMsg})
	}
	return nil
}

// robotMessage is the body of robot/oToMessages/batchSend (UserIDs) and
// robot/groupMessages/send (OpenConversationID).
type robotMessage struct {
	RobotCode          string   `json:"robotCode"`
	UserIDs            []string `json:"userIds,omitempty"`
	OpenConversationID string   `json:"openConversationId,omitempty"`
	MsgKey             string   `json:"msgKey"`
	MsgParam           string   `json:"msgParam"` // a JSON string, not an object
}

// viaOpenAPI sends through the robot OpenAPI. The group API has no
// @-mention for sampleMarkdown, so a group reply names the asker in the
// text instead.
func (r *robot) viaOpenAPI(ctx context.Context, rt replyTo, title, text string, mention bool) error {
	if mention {
		name := rt.Nick
		if name == "" {
			name = rt.User
		}
		text = withMention(name, text)
	}
	return r.robotSend(ctx, rt, "sampleMarkdown", map[string]string{"title": title, "text": text})
}

// robotSend sends one message of msgKey with param (its msgParam) to rt's
// group (groupMessages/send) or user (oToMessages/batchSend).
func (r *robot) robotSend(ctx context.Context, rt replyTo, msgKey string, param map[string]string) error {
	p, err := json.Marshal(param)
	if err != nil {
		return fmt.Errorf("dingtalk: robot %q: %w: %w", r.cfg.Name, err, channels.ErrPermanent)
	}
	msg := robotMessage{RobotCode: r.cfg.RobotCode, MsgKey: msgKey, MsgParam: string(p)}
	path := "/v1.0/robot/oToMessages/batchSend"
	if rt.Group {
		msg.OpenConversationID, path = rt.Conversation, "/v1.0/robot/groupMessages/send"
	} else {
		msg.UserIDs = []string{rt.User}
	}
	var ans struct {
		ProcessQueryKey           string   `json:"processQueryKey"`
		InvalidStaffIDList        []string `json:"invalidStaffIdList"`
		FlowControlledStaffIDList []string `json:"flowControlledStaffIdList"`
	}
	if err := r.api.call(ctx, http.MethodPost, path, msg, &ans); err != nil {
		r.api.permissionHint(err, robotSendPermission)
		return fmt.Errorf("dingtalk: robot %q: %s: %w", r.cfg.Name, path, classify(err))
	}
	switch {
	case len(ans.InvalidStaffIDList) > 0:
		return fmt.Errorf("dingtalk: robot %q: user %q is invalid for this robot: %w", r.cfg.Name, rt.User, channels.ErrPermanent)
	case len(ans.FlowControlledStaffIDList) > 0:
		return fmt.Errorf("dingtalk: robot %q: user %q is flow controlled; will retry", r.cfg.Name, rt.User)
	}
	return nil
}

// withMention puts "@name" before text: on the same line, or on a line of
// its own when text opens with a markdown block (a heading, list, quote,
// fence or table) that a prefix would break.
func withMention(name, text string) string {
	if strings.ContainsAny(text[:1], "#>-*|`0123456789") {
		return "@" + name + "\n\n" + text
	}
	return "@" + name + " " + text
}

// titleOf is a markdown message's title, which notifications show: the
// first line of text without markdown marks, cut to maxTitleRunes; else
// fallback (messages.title), else defaultTitle.
func titleOf(text, fallback string) string {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.Trim(strings.TrimSpace(line), "#*>-`_ "))
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > maxTitleRunes {
			line = string([]rune(line)[:maxTitleRunes]) + "…"
		}
		return line
	}
	return cmp.Or(fallback, defaultTitle)
}
