package channels

import (
	"context"
	"encoding/json"
	"errors"
)

// Pusher is a channel that can send a message nobody asked for (a
// scheduled report): it builds the address, in its own ReplyTo JSON, of a
// chat on one of its accounts. The delivery layer then sends to it like
// any reply (Outbound.Answer is false).
type Pusher interface {
	// PushAddress is the ReplyTo of chatID (a user id for ChatSingle, the
	// platform's group id for ChatGroup) on account. Errors wrap
	// ErrUnknownAccount, or ErrCannotPush when the account cannot start a
	// conversation there (a callback-only bot) or, where the platform can
	// tell, the bot is not in the chat.
	PushAddress(ctx context.Context, account, chatType, chatID string) (json.RawMessage, error)
}

// FirstContactPusher is a Pusher some of whose accounts may push only into
// a conversation where someone wrote to the bot first (the WeCom AI bot:
// aibot_send_msg reaches only chats that spoke to it). A channel cannot
// see the inbox, so it says which accounts these are, and the gateway
// accepts a target on one only after a message from that chat arrived on
// that account.
type FirstContactPusher interface {
	Pusher
	// PushNeedsFirstContact reports whether account can push only to chats
	// that wrote to it first.
	PushNeedsFirstContact(account string) bool
}

// ErrCannotPush: the account cannot send an unprompted message to that
// chat.
var ErrCannotPush = errors.New("cannot send to this chat unprompted")
