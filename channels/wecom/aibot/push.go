package aibot

import (
	"encoding/json"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

// Pushes reports whether the bot can write to a chat unprompted: on the
// long connection it pushes aibot_send_msg to a chat id, a group's or a
// user's, that has written to it first (checked by the gateway:
// channels.FirstContactPusher); in callback mode it can only answer
// through the response_url of a message it received.
func (b *Bot) Pushes() bool { return b.mode == ModeWebSocket }

// PushAddress is the reply address of a push into chatID (scheduled
// reports). Errors wrap channels.ErrCannotPush: a bot in callback mode.
func (b *Bot) PushAddress(chatType, chatID string) (json.RawMessage, error) {
	if !b.Pushes() {
		return nil, fmt.Errorf("wecom: bot %q is in callback mode, which answers messages only: %w", b.name, channels.ErrCannotPush)
	}
	return json.Marshal(botReplyTo{Mode: ModeWebSocket, ChatID: chatID, ChatType: chatType})
}
