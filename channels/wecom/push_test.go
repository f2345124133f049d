package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/hermes-gw/hermes/channels"
)

func TestPushAddress(t *testing.T) {
	c := &Channel{apps: map[string]*App{"app-hr": {name: "app-hr"}}, bots: map[string]*Bot{
		"bot-ws": {name: "bot-ws", mode: BotModeWebSocket}, "bot-cb": {name: "bot-cb", mode: BotModeCallback}}}
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
		var rt botReplyTo
		if err != nil || json.Unmarshal(raw, &rt) != nil || rt.Mode != BotModeWebSocket || rt.ChatID != "wrkSFfCgAA" || rt.ChatType != channels.ChatGroup {
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
	c := &Channel{apps: map[string]*App{"app-hr": {name: "app-hr"}}, bots: map[string]*Bot{
		"bot-ws": {name: "bot-ws", mode: BotModeWebSocket}, "bot-cb": {name: "bot-cb", mode: BotModeCallback}}}
	for account, want := range map[string]bool{"bot-ws": true, "bot-cb": false, "app-hr": false, "nope": false} {
		if got := c.PushNeedsFirstContact(account); got != want {
			t.Errorf("%s: %v, want %v", account, got, want)
		}
	}
}
