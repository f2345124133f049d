package dingtalk

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

func addr(t *testing.T, rt replyTo) json.RawMessage {
	b, err := json.Marshal(rt)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSend_Routes(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, nil)
	ch := &Channel{robots: map[string]*robot{"hr-bot": r}}
	ctx := withTimeout(t, 10*time.Second)
	live := c.Now().Add(time.Hour).UnixMilli()
	expired := c.Now().Add(30 * time.Second).UnixMilli() // inside the safety margin

	cases := []struct {
		name string
		rt   replyTo
		part int
		want dingtalktest.Sent
	}{
		{"SingleWebhook", replyTo{Conversation: "c1", User: "zhangsan", Webhook: fake.SessionWebhook("s1"), WebhookExpires: live}, 0,
			dingtalktest.Sent{Via: "webhook", Conversation: "s1", MsgKey: "markdown", Title: "年假", Text: "## 年假\n还有 5 天"}},
		{"GroupWebhookMentions", replyTo{Group: true, Conversation: "c2", User: "lisi", Webhook: fake.SessionWebhook("s2"), WebhookExpires: live}, 0,
			dingtalktest.Sent{Via: "webhook", Conversation: "s2", MsgKey: "markdown", Title: "年假", Text: "@lisi\n\n## 年假\n还有 5 天", AtUserIDs: []string{"lisi"}}},
		{"GroupLaterPartNoMention", replyTo{Group: true, Conversation: "c2", User: "lisi", Webhook: fake.SessionWebhook("s2"), WebhookExpires: live}, 1,
			dingtalktest.Sent{Via: "webhook", Conversation: "s2", MsgKey: "markdown", Title: "年假", Text: "## 年假\n还有 5 天"}},
		{"SingleOpenAPI", replyTo{Conversation: "c1", User: "zhangsan", Webhook: fake.SessionWebhook("s1"), WebhookExpires: expired}, 0,
			dingtalktest.Sent{Via: "openapi", Users: []string{"zhangsan"}, MsgKey: "sampleMarkdown", Title: "年假", Text: "## 年假\n还有 5 天"}},
		{"GroupOpenAPI", replyTo{Group: true, Conversation: "c2", User: "lisi", Nick: "李四"}, 0,
			dingtalktest.Sent{Via: "openapi", Conversation: "c2", MsgKey: "sampleMarkdown", Title: "年假", Text: "@李四\n\n## 年假\n还有 5 天"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ch.Send(ctx, channels.Outbound{Account: "hr-bot", ReplyTo: addr(t, tc.rt), Format: channels.FormatMarkdown,
				Text: "## 年假\n还有 5 天", Part: tc.part, Parts: 2})
			if err != nil {
				t.Fatal(err)
			}
			sent := fake.Sent()
			if len(sent) != i+1 {
				t.Fatalf("sent %d, want %d", len(sent), i+1)
			}
			got, _ := json.Marshal(sent[i])
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
	if n := fake.TokenRequests(); n != 1 {
		t.Errorf("token requests %d, want 1 (cached)", n)
	}
}

func TestSend_Errors(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, nil)
	ctx := withTimeout(t, 10*time.Second)
	group := addr(t, replyTo{Group: true, Conversation: "c2", User: "lisi"})
	send := func(rt json.RawMessage, text string) error {
		_, err := r.send(ctx, channels.Outbound{Account: "hr-bot", ReplyTo: rt, Text: text, Parts: 1})
		return err
	}
	t.Run("Permanent", func(t *testing.T) {
		for name, err := range map[string]error{
			"bad address": send([]byte(`{}`), "x"),
			"empty":       send(group, " "),
			"too long":    send(group, strings.Repeat("长", MaxMarkdownBytes/3+1)),
		} {
			if !errors.Is(err, channels.ErrPermanent) {
				t.Errorf("%s: %v, want ErrPermanent", name, err)
			}
		}
		fake.Fail("/v1.0/robot/groupMessages/send", 1, 400, "param.invalid")
		if err := send(group, "x"); !errors.Is(err, channels.ErrPermanent) {
			t.Errorf("400: %v, want ErrPermanent", err)
		}
		fake.Fail("/v1.0/robot/groupMessages/send", 1, 403, "Forbidden.AccessDenied.AccessTokenPermissionDenied")
		if err := send(group, "x"); !errors.Is(err, channels.ErrPermanent) {
			t.Errorf("403: %v, want ErrPermanent", err)
		}
	})
	t.Run("Retryable", func(t *testing.T) {
		for status, code := range map[int]string{500: "ServiceUnavailable", 429: "Throttling.Api"} {
			fake.Fail("/v1.0/robot/groupMessages/send", 1, status, code)
			err := send(group, "x")
			var ae *APIError
			if err == nil || errors.Is(err, channels.ErrPermanent) || !errors.As(err, &ae) || ae.Status != status {
				t.Errorf("%d: %v, want a retryable APIError", status, err)
			}
		}
	})
	t.Run("WebhookRefusedFallsBack", func(t *testing.T) {
		before := len(fake.Sent())
		fake.Fail("/robot/sendBySession", 1, 200, "300001") // an expired session
		rt := addr(t, replyTo{Conversation: "c1", User: "zhangsan", Webhook: fake.SessionWebhook("s1"), WebhookExpires: c.Now().Add(time.Hour).UnixMilli()})
		if err := send(rt, "x"); err != nil {
			t.Fatal(err)
		}
		if sent := fake.Sent(); len(sent) != before+1 || sent[before].Via != "openapi" {
			t.Errorf("sent %+v", sent[before:])
		}
	})
}

// Two replicas share one token cache: an expired token is fetched again
// once, and both use the new one.
func TestSend_TokenExpiryRefreshedOnce(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	cache := chantest.NewTokenCache()
	a, b := testRobot(t, fake, c, cache, nil), testRobot(t, fake, c, cache, nil)
	ctx := withTimeout(t, 10*time.Second)
	out := channels.Outbound{Account: "hr-bot", ReplyTo: addr(t, replyTo{User: "zhangsan", Conversation: "c1"}), Text: "x", Parts: 1}
	if _, err := a.send(ctx, out); err != nil {
		t.Fatal(err)
	}
	fake.ExpireTokens()
	if _, err := a.send(ctx, out); err != nil {
		t.Fatal(err)
	}
	if _, err := b.send(ctx, out); err != nil {
		t.Fatal(err)
	}
	if n := fake.TokenRequests(); n != 2 {
		t.Errorf("token requests %d, want 2 (first, then one refresh shared by both replicas)", n)
	}
	if n := len(fake.Sent()); n != 3 {
		t.Errorf("sent %d, want 3", n)
	}
}

// The first part of a card's answer waits for the card: the delivery
// layer holds it back until received + stream_deadline, by the robot's
// Limits (the hold itself: gateway/live_test.go); Send sends what it is
// given.
func TestSend_DefersFirstPartToCard(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, func(s *RobotSection) { s.CardTemplateID = "tpl.schema" })
	ch := &Channel{robots: map[string]*robot{"hr-bot": r, "plain": testRobot(t, fake, c, nil, nil)}}
	if l := ch.Limits("hr-bot"); !l.Streams || l.LiveDeadline != DefaultStreamDeadline || l.LiveInterval != r.cfg.CardInterval {
		t.Fatalf("Limits %+v, want the first part held until received+deadline, the card updated every card_interval", l)
	}
	if l := ch.Limits("plain"); l.Streams || l.LiveDeadline != 0 {
		t.Fatalf("a robot without a card template has a live reply: %+v", l)
	}
	ctx := withTimeout(t, 10*time.Second)
	rt := addr(t, replyTo{User: "zhangsan", Conversation: "c1", Card: "hermes-x", Received: c.Now().UnixMilli()})
	if _, err := r.send(ctx, channels.Outbound{Account: "hr-bot", ReplyTo: rt, Text: "y", Part: 1, Parts: 2, Answer: true}); err != nil {
		t.Fatalf("later part: %v", err)
	}
	// An async result to the same chat is not the card's answer: at once.
	if _, err := r.send(ctx, channels.Outbound{Account: "hr-bot", ReplyTo: rt, Text: "z", Part: 0, Parts: 1}); err != nil {
		t.Fatalf("async result: %v", err)
	}
	c.Add(DefaultStreamDeadline)
	if _, err := r.send(ctx, channels.Outbound{Account: "hr-bot", ReplyTo: rt, Text: "x", Part: 0, Parts: 2, Answer: true}); err != nil {
		t.Fatalf("after the deadline: %v", err)
	}
	if n := len(fake.Sent()); n != 3 {
		t.Errorf("sent %d, want 3", n)
	}
}

func TestTitleOf(t *testing.T) {
	for in, want := range map[string]string{
		"## 年假余额\n还有 5 天": "年假余额",
		"\n\n**重要**":      "重要",
		"":                defaultTitle,
		"一二三四五六七八九十一二三四五六七八九十一二三": "一二三四五六七八九十一二三四五六七八九十…",
	} {
		if got := titleOf(in, ""); got != want {
			t.Errorf("titleOf(%q) = %q, want %q", in, got, want)
		}
	}
	if got := titleOf("", "答复"); got != "答复" {
		t.Errorf("titleOf without a line = %q, want messages.title", got)
	}
}
