package feishu

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

var _ channels.Pusher = (*Channel)(nil)

// PushAddress implements channels.Pusher for scheduled reports: a new
// message (not a reply) to a group by its chat_id, or to a user by the
// app's id type (user_id or open_id). Whether the bot is in the chat is
// known only when Feishu answers the send; that failure is recorded as
// the delivery's. Errors wrap channels.ErrUnknownAccount or
// channels.ErrCannotPush.
func (c *Channel) PushAddress(_ context.Context, account, chatType, chatID string) (json.RawMessage, error) {
	a, ok := c.apps[account]
	if !ok {
		return nil, fmt.Errorf("feishu: %w %q", channels.ErrUnknownAccount, account)
	}
	if chatID == "" {
		return nil, fmt.Errorf("feishu: app %q: no chat id: %w", account, channels.ErrCannotPush)
	}
	rt := replyTo{ChatID: chatID, ReceiveIDType: a.cfg.IDType}
	if chatType == channels.ChatGroup {
		rt.Group, rt.ReceiveIDType = true, "chat_id"
	}
	return json.Marshal(rt)
}
