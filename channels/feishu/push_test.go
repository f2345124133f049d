package feishu_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// A report has no message to reply to: it goes as a new message, to a
// group by chat_id or to a user by the app's id type.
func TestPushSendsNewMessages(t *testing.T) {
	r := newEventRig(t, "")
	ctx := withTimeout(t, 10*time.Second)
	for _, tc := range []struct{ chatType, chatID, idType string }{
		{channels.ChatGroup, "oc_it_group", "chat_id"},
		{channels.ChatSingle, testUserID, "user_id"},
	} {
		addr, err := r.ch.PushAddress(ctx, testAccount, tc.chatType, tc.chatID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ch.Send(ctx, channels.Outbound{Account: testAccount, ReplyTo: addr, Format: channels.FormatMarkdown,
			Text: "上周工单 37 张", Parts: 1, Key: "report:1:" + tc.chatID + "/0"}); err != nil {
			t.Fatal(err)
		}
	}
	got := r.api.Delivered()
	if len(got) != 2 {
		t.Fatalf("delivered %+v, want two new messages", got)
	}
	for i, want := range [][2]string{{"chat_id", "oc_it_group"}, {"user_id", testUserID}} {
		if got[i].To != "" || got[i].ReceiveIDType != want[0] || got[i].ReceiveID != want[1] || got[i].Text() != "上周工单 37 张" {
			t.Fatalf("message %d = %+v, want a new message to %s %s", i, got[i], want[0], want[1])
		}
	}
	if _, err := r.ch.PushAddress(ctx, "nope", channels.ChatGroup, "oc_x"); !errors.Is(err, channels.ErrUnknownAccount) {
		t.Fatalf("unknown account: %v", err)
	}
}
