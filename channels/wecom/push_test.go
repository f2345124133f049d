package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
)

// pushChannel has an app, a websocket bot and a callback bot.
func pushChannel(t *testing.T) *Channel {
	t.Helper()
	env := channels.Env{Logger: slog.New(slog.DiscardHandler)}
	ws, err := aibot.New(aibot.Config{Name: "bot-ws", Mode: aibot.ModeWebSocket, CorpID: "c", BotID: "id", Secret: "s"}, 0, env)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := aibot.New(aibot.Config{Name: "bot-cb", Mode: aibot.ModeCallback, CorpID: "c", Token: "t",
		EncodingAESKey: "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"}, 0, env)
	if err != nil {
		t.Fatal(err)
	}
	return &Channel{apps: map[string]*App{"app-hr": {name: "app-hr"}}, bots: map[string]*aibot.Bot{"bot-ws": ws, "bot-cb": cb}}
}

func TestPushAddress(t *testing.T) {
	c := pushChannel(t)
	ctx := context.Background()

	t.Run("AppUser", func(t *testing.T) {
		raw, err := c.PushAddress(ctx, "app-hr", channels.ChatSingle, "zhangsan")
		var rt appReplyTo
		if err != nil || json.Unmarshal(raw, &rt) != nil || rt.ToUser != "zhangsan" {
			t.Fatalf("%s %v", raw, err)
		}
	})
	t.Run("BotGroup", func(t *testing.T) {
		raw, err := c.PushAddress(ctx, "bot-ws", channels.ChatGroup, "wrkSFfCgAA")
		// The bot's reply address (aibot's botReplyTo), as JSON.
		var rt struct {
			Mode        string `json:"mode"`
			ChatID      string `json:"chat_id"`
			ChatType    string `json:"chat_type"`
			MsgID       string `json:"msg_id"`
			ResponseURL string `json:"response_url"`
			Received    int64  `json:"received"`
		}
		if err != nil || json.Unmarshal(raw, &rt) != nil || rt.Mode != aibot.ModeWebSocket || rt.ChatID != "wrkSFfCgAA" || rt.ChatType != channels.ChatGroup {
			t.Fatalf("%s %v", raw, err)
		}
		// A pushed message answers nothing: no stream may hold it back.
		if rt.ResponseURL != "" || rt.MsgID != "" || rt.Received != 0 {
			t.Errorf("push address carries a message's fields: %+v", rt)
		}
	})
	for name, tc := range map[string]struct {
		account, chatType, chat string
		want                    error
	}{
		"ErrAppGroup":       {"app-hr", channels.ChatGroup, "wrkSFfCgAA", channels.ErrCannotPush},
		"ErrCallbackBot":    {"bot-cb", channels.ChatGroup, "wrkSFfCgAA", channels.ErrCannotPush},
		"ErrUnknownAccount": {"app-nope", channels.ChatSingle, "zhangsan", channels.ErrUnknownAccount},
		"ErrNoChat":         {"bot-ws", channels.ChatSingle, "", channels.ErrCannotPush},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := c.PushAddress(ctx, tc.account, tc.chatType, tc.chat); !errors.Is(err, tc.want) {
				t.Errorf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func TestPushNeedsFirstContact(t *testing.T) {
	c := pushChannel(t)
	for account, want := range map[string]bool{"bot-ws": true, "bot-cb": false, "app-hr": false, "nope": false} {
		if got := c.PushNeedsFirstContact(account); got != want {
			t.Errorf("%s: %v, want %v", account, got, want)
		}
	}
}
