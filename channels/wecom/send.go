package wecom

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/silenceper/wechat/v2/work/message"
)

// duplicateCheckSlack is added to the time since the first attempt, so the
// window still covers that attempt however long this one takes to arrive.
const duplicateCheckSlack = 60 * time.Second

// appReplyTo is an app's Inbound.ReplyTo: the user to answer. Its JSON
// is what earlier versions stored, so stored replies stay deliverable.
type appReplyTo struct {
	ToUser string `json:"to_user"`
}

// textRequest is the message/send body for a text message. silenceper's
// SendTextRequest is not used because it sends agentid as a JSON string
// (WeCom documents an integer) and always sends the duplicate-check fields,
// whereas a first attempt should not ask for duplicate suppression.
type textRequest struct {
	ToUser  string    `json:"touser"`
	MsgType string    `json:"msgtype"`
	AgentID int64     `json:"agentid"`
	Text    textField `json:"text"`
	duplicateCheck
}

// duplicateCheck are message/send's duplicate-suppression fields, left out
// of a first attempt.
type duplicateCheck struct {
	EnableDuplicateCheck   int `json:"enable_duplicate_check,omitempty"`
	DuplicateCheckInterval int `json:"duplicate_check_interval,omitempty"`
}

type textField struct {
	Content string `json:"content"`
}

// Send delivers one text part to the user in out.ReplyTo.
//
// Errors wrap channels.ErrPermanent when retrying cannot help: unknown
// account, no recipient, empty text or text over MaxTextBytes (WeCom would
// cut it), and the permanent errcodes in errcodes.go. When WeCom answered,
// the error also wraps an *wxbiz.APIError. An expired or invalidated token is
// refreshed and the send retried once before Send returns. Other errors are
// transient. Send returns ctx's error when ctx ends first; the request may
// still reach WeCom (silenceper's API takes no context), which is why a retry
// asks for duplicate suppression.
func (a *App) Send(ctx context.Context, out channels.Outbound) (channels.SendResult, error) {
	var rt appReplyTo
	if err := json.Unmarshal(out.ReplyTo, &rt); err != nil {
		return channels.SendResult{}, fmt.Errorf("wecom: app %q: reply address: %w: %w", a.name, err, channels.ErrPermanent)
	}
	to := rt.ToUser
	switch {
	case to == "":
		return channels.SendResult{}, fmt.Errorf("wecom: app %q: reply without a recipient: %w", a.name, channels.ErrPermanent)
	case out.Format == channels.FormatImage:
		return a.sendImage(ctx, out, to)
	case strings.TrimSpace(out.Text) == "":
		return channels.SendResult{}, fmt.Errorf("wecom: app %q: send to %q: empty text: %w", a.name, to, channels.ErrPermanent)
	case len(out.Text) > MaxTextBytes:
		return channels.SendResult{}, fmt.Errorf("wecom: app %q: send to %q: text of %d bytes exceeds WeCom's %d: %w",
			a.name, to, len(out.Text), MaxTextBytes, channels.ErrPermanent)
	}
	req := textRequest{ToUser: to, MsgType: "text", AgentID: a.agent, Text: textField{Content: out.Text},
		duplicateCheck: a.duplicateCheck(out)}
	return a.post(ctx, "MessageSendText", req, to)
}

// duplicateCheck asks, on a retry, for the duplicate check: an earlier
// attempt may have reached WeCom before we lost its answer, so WeCom is
// asked to drop an identical message sent since then.
func (a *App) duplicateCheck(out channels.Outbound) duplicateCheck {
	if out.Attempt == 0 {
		return duplicateCheck{}
	}
	return duplicateCheck{EnableDuplicateCheck: 1, DuplicateCheckInterval: a.duplicateCheckInterval(out.FirstAttemptUnix)}
}

// post sends req (apiName names it in silenceper's errors) to the user to
// with message/send.
func (a *App) post(ctx context.Context, apiName string, req any, to string) (channels.SendResult, error) {
	resp, err := a.postMessage(ctx, apiName, req, to)
	if err != nil {
		return channels.SendResult{}, err
	}
	return channels.SendResult{MessageID: resp.MsgID}, nil
}

// postMessage is post with WeCom's whole answer (a card's response_code).
func (a *App) postMessage(ctx context.Context, apiName string, req any, to string) (*message.SendResponse, error) {
	resp, err := untilDone(ctx, func() (*message.SendResponse, error) {
		return a.sendWithRefresh(apiName, req)
	})
	if err != nil {
		return nil, a.callError("message/send", err, fmt.Sprintf("send to %q", to))
	}
	if rejected(resp, to) {
		// errcode 0 but the single recipient listed as invalid or unlicensed:
		// nothing was delivered and nothing will be.
		return nil, fmt.Errorf("wecom: app %q: send to %q: recipient invalid or unlicensed (invaliduser=%q unlicenseduser=%q): %w",
			a.name, to, resp.InvalidUser, resp.UnlicensedUser, channels.ErrPermanent)
	}
	return resp, nil
}

// sendWithRefresh calls message/send with req (apiName names it in
// silenceper's errors), refreshing an invalidated token once.
func (a *App) sendWithRefresh(apiName string, req any) (*message.SendResponse, error) {
	return refreshOnce(a, func() (*message.SendResponse, error) { return a.message.Send(apiName, req) })
}

// duplicateCheckInterval covers the time since the first attempt plus some
// slack, within WeCom's 4-hour maximum. An unknown first attempt (0) gets
// the maximum.
func (a *App) duplicateCheckInterval(firstAttemptUnix int64) int {
	maxSec := int64(MaxDuplicateCheckInterval / time.Second)
	if firstAttemptUnix <= 0 {
		return int(maxSec)
	}
	sec := a.now().Unix() - firstAttemptUnix + int64(duplicateCheckSlack/time.Second)
	sec = max(sec, int64(duplicateCheckSlack/time.Second))
	return int(min(sec, maxSec))
}

// rejected reports whether WeCom accepted the call but not the recipient.
func rejected(resp *message.SendResponse, to string) bool {
	if resp == nil {
		return false
	}
	return listed(resp.InvalidUser, to) || listed(resp.UnlicensedUser, to)
}

// listed reports whether user is in a '|'-separated WeCom user list; WeCom
// lowercases the ids it returns there.
func listed(list, user string) bool {
	for _, u := range strings.Split(list, "|") {
		if u != "" && strings.EqualFold(u, user) {
			return true
		}
	}
	return false
}
