package dingtalk

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

var _ channels.Pusher = (*Channel)(nil)

// PushAddress implements channels.Pusher for scheduled reports: the
// robot's OpenAPI sends to a group by its openConversationId
// (groupMessages/send) or to a user by staffId (oToMessages/batchSend).
// The address has no session webhook, no card and no asker, so Send takes
// the OpenAPI and mentions nobody. Whether the robot is in the group is
// known only when DingTalk answers the send; that failure is recorded as
// the delivery's. Errors wrap channels.ErrUnknownAccount or
// channels.ErrCannotPush.
func (c *Channel) PushAddress(_ context.Context, account, chatType, chatID string) (json.RawMessage, error) {
	if _, ok := c.robots[account]; !ok {
		return nil, fmt.Errorf("dingtalk: %w %q", channels.ErrUnknownAccount, account)
	}
	if chatID == "" {
		return nil, fmt.Errorf("dingtalk: robot %q: no chat id: %w", account, channels.ErrCannotPush)
	}
	if chatType == channels.ChatGroup {
		return json.Marshal(replyTo{Group: true, Conversation: chatID})
	}
	return json.Marshal(replyTo{User: chatID})
}
