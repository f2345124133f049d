package dingtalk

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// A report goes through the robot's OpenAPI, to a group or a user, and
// mentions nobody (there is no asker).
func TestPushSendsThroughTheOpenAPI(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	r := testRobot(t, fake, newClock(), nil, nil)
	ch := &Channel{robots: map[string]*robot{"hr-bot": r}}
	ctx := withTimeout(t, 10*time.Second)
	for _, tc := range []struct{ chatType, chatID string }{{channels.ChatGroup, "cidGroup=="}, {channels.ChatSingle, "zhangsan"}} {
		addr, err := ch.PushAddress(ctx, "hr-bot", tc.chatType, tc.chatID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.Send(ctx, channels.Outbound{Account: "hr-bot", ReplyTo: addr, Format: channels.FormatMarkdown,
			Text: "## 周报\n工单 37 张", Parts: 1}); err != nil {
			t.Fatal(err)
		}
	}
	want := []dingtalktest.Sent{
		{Via: "openapi", Conversation: "cidGroup==", MsgKey: "sampleMarkdown", Title: "周报", Text: "## 周报\n工单 37 张"},
		{Via: "openapi", Users: []string{"zhangsan"}, MsgKey: "sampleMarkdown", Title: "周报", Text: "## 周报\n工单 37 张"},
	}
	got, _ := json.Marshal(fake.Sent())
	w, _ := json.Marshal(want)
	if string(got) != string(w) {
		t.Fatalf("sent %s\nwant %s", got, w)
	}
	if _, err := ch.PushAddress(ctx, "nope", channels.ChatGroup, "c"); !errors.Is(err, channels.ErrUnknownAccount) {
		t.Fatalf("unknown robot: %v", err)
	}
}
