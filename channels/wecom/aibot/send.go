package aibot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// botResult is WeCom's answer to a response_url POST or a socket request.
type botResult struct {
	ErrCode int64  `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// err turns a non-zero errcode into an error: permanent, unless the code
// is one WeCom documents as transient (system busy, rate limits). A
// response_url used twice or a message WeCom refuses fails the same way
// every time.
func (r botResult) err(op string) error {
	if r.ErrCode == 0 {
		return nil
	}
	apiErr := &wxbiz.APIError{Op: op, Code: r.ErrCode, Message: r.ErrMsg}
	if wxbiz.Transient(r.ErrCode) {
		return fmt.Errorf("%s: %w", wxbiz.LookupCode(r.ErrCode).What, apiErr)
	}
	return fmt.Errorf("%w: %w", apiErr, channels.ErrPermanent)
}

// postResponseURL sends reply (markdown, or a template card) through the
// message's response_url, which WeCom accepts once, within
// ResponseURLLifetime.
func (b *Bot) postResponseURL(ctx context.Context, rt botReplyTo, reply botReply, now time.Time) error {
	switch {
	case rt.ResponseURL == "":
		return fmt.Errorf("message %q has no response_url: %w", rt.MsgID, channels.ErrPermanent)
	case !now.Before(rt.receivedAt().Add(ResponseURLLifetime)):
		return fmt.Errorf("response_url of message %q expired (WeCom keeps it %s): %w",
			rt.MsgID, ResponseURLLifetime, channels.ErrPermanent)
	}
	body, err := json.Marshal(reply)
	if err != nil {
		return fmt.Errorf("response_url: %w: %w", err, channels.ErrPermanent)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rt.ResponseURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("response_url: %w: %w", err, channels.ErrPermanent)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.respClient.Do(req)
	if errors.Is(err, channels.ErrFetchRefused) {
		// Not WeCom's host (the guard logged and counted it): no retry
		// makes it one.
		return fmt.Errorf("response_url of message %q: %w: %w", rt.MsgID, redactURL(err), channels.ErrPermanent)
	}
	if err != nil {
		// The URL's query is a credential of sorts; keep it out of errors.
		return fmt.Errorf("response_url of message %q: %s", rt.MsgID, wxbiz.Redact(err.Error(), rt.ResponseURL))
	}
	defer resp.Body.Close()
	answer, err := wxbiz.ReadLimited(resp.Body, wxbiz.MaxCallbackBytes)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("response_url of message %q: HTTP %d", rt.MsgID, resp.StatusCode)
	}
	var res botResult
	if err := json.Unmarshal(answer, &res); err != nil {
		return fmt.Errorf("response_url of message %q: answer is not JSON: %v", rt.MsgID, err)
	}
	return res.err("response_url")
}

// pushMarkdown sends content to a chat unprompted (aibot_send_msg) over the
// live socket, and waits for WeCom's ack.
func (b *Bot) pushMarkdown(ctx context.Context, chatID, content string) error {
	return b.push(ctx, botReply{ChatID: chatID, MsgType: channels.FormatMarkdown, Markdown: &botText{Content: content}})
}

// push sends reply (with its chatid) unprompted over the live socket
// (aibot_send_msg), and waits for WeCom's ack.
func (b *Bot) push(ctx context.Context, reply botReply) error {
	conn := b.live.Load()
	if conn == nil {
		return errNoSocket
	}
	ack, err := conn.request(ctx, botCmdSendMsg, newReqID(), reply)
	if err != nil {
		return err
	}
	return ack.result().err(botCmdSendMsg)
}
