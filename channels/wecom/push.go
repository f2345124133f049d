package wecom

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

var _ channels.FirstContactPusher = (*Channel)(nil)

// PushAddress implements channels.Pusher for scheduled reports.
//
// An app sends to users (message/send touser); it cannot post into group
// chats other than those it created itself (appchat), which Hermes does
// not manage. A bot on the long connection pushes aibot_send_msg to a
// chat id, a group's or a user's, that has written to it first (checked
// by the gateway: PushNeedsFirstContact). A bot in callback mode can only answer
// through the response_url of a message it received, so it cannot push.
// Errors wrap channels.ErrUnknownAccount or channels.ErrCannotPush.
func (c *Channel) PushAddress(_ context.Context, account, chatType, chatID string) (json.RawMessage, error) {
	if chatID == "" {
		return nil, fmt.Errorf("wecom: %q: no chat id: %w", account, channels.ErrCannotPush)
	}
	if b, ok := c.bots[account]; ok {
		return b.PushAddress(chatType, chatID)
	}
	if _, ok := c.apps[account]; !ok {
		return nil, fmt.Errorf("wecom: %w %q", channels.ErrUnknownAccount, account)
	}
	if chatType != channels.ChatSingle {
		return nil, fmt.Errorf("wecom: app %q sends to users only, not to group chats: %w", account, channels.ErrCannotPush)
	}
	return json.Marshal(appReplyTo{ToUser: chatID})
}

// PushNeedsFirstContact implements channels.FirstContactPusher: a bot on
// the long connection may push (aibot_send_msg) only into a conversation
// where a user spoke to it first; an app reaches any user of its scope.
func (c *Channel) PushNeedsFirstContact(account string) bool {
	b, ok := c.bots[account]
	return ok && b.Pushes()
}
