package dingtalk

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

func TestSendImage(t *testing.T) {
	image := func(rt json.RawMessage, pic []byte) channels.Outbound {
		return channels.Outbound{Account: "hr-bot", ReplyTo: rt, Format: channels.FormatImage,
			Image: &channels.Image{Name: "工单.png", PNG: pic}, Parts: 1, Answer: true}
	}

	t.Run("OK", func(t *testing.T) {
		fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
		c := newClock()
		ch := &Channel{robots: map[string]*robot{"hr-bot": testRobot(t, fake, c, nil, nil)}}
		if !ch.Limits("hr-bot").Images {
			t.Fatal("Limits.Images = false")
		}
		ctx := withTimeout(t, 10*time.Second)
		live := c.Now().Add(time.Hour).UnixMilli()
		cases := []struct {
			name string
			rt   replyTo
			want dingtalktest.Sent
		}{
			// A live session webhook and a card stream change nothing: the
			// webhook takes no media and the card shows text.
			{"Group", replyTo{Group: true, Conversation: "cid-it", User: "lisi", Card: "card-1", Received: c.Now().UnixMilli()},
				dingtalktest.Sent{Via: "openapi", Conversation: "cid-it", MsgKey: "sampleImageMsg"}},
			{"Single", replyTo{Conversation: "c1", User: "zhangsan", Webhook: fake.SessionWebhook("s1"), WebhookExpires: live},
				dingtalktest.Sent{Via: "openapi", Users: []string{"zhangsan"}, MsgKey: "sampleImageMsg"}},
		}
		for i, tc := range cases {
			pic := chantest.NoisePNG(t, 100+i)
			if _, err := ch.Send(ctx, image(addr(t, tc.rt), pic)); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			up := fake.Uploads()[i]
			if sha256.Sum256(up.Data) != sha256.Sum256(pic) || up.Type != "image" || up.Filename != "工单.png" {
				t.Fatalf("%s: upload %s %q of %d bytes, want the picture's %d", tc.name, up.Type, up.Filename, len(up.Data), len(pic))
			}
			tc.want.PhotoURL = up.MediaID
			got, _ := json.Marshal(fake.Sent()[i])
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) {
				t.Errorf("%s: got  %s\nwant %s", tc.name, got, want)
			}
		}
		if n := len(fake.Sent()); n != len(cases) {
			t.Fatalf("sent %d, want %d", n, len(cases))
		}
	})

	t.Run("ErrOversize", func(t *testing.T) {
		fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
		r := testRobot(t, fake, newClock(), nil, nil)
		big := append(chantest.NoisePNG(t, 8), make([]byte, MaxImageBytes)...)
		_, err := r.send(withTimeout(t, 10*time.Second), image(addr(t, replyTo{Group: true, Conversation: "c2"}), big))
		if !errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("err = %v, want permanent", err)
		}
		if n := len(fake.Uploads()) + fake.TokenRequests(); n != 0 {
			t.Fatalf("%d calls reached DingTalk, want none", n)
		}
	})

	t.Run("RefreshesExpiredTokenOnUpload", func(t *testing.T) {
		fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
		r := testRobot(t, fake, newClock(), nil, nil)
		ctx := withTimeout(t, 10*time.Second)
		group := addr(t, replyTo{Group: true, Conversation: "c2"})
		if _, err := r.send(ctx, image(group, chantest.NoisePNG(t, 10))); err != nil {
			t.Fatal(err)
		}
		fake.ExpireTokens()
		if _, err := r.send(ctx, image(group, chantest.NoisePNG(t, 11))); err != nil {
			t.Fatalf("send after expiry: %v", err)
		}
		if n := fake.TokenRequests(); n != 2 {
			t.Fatalf("%d token requests, want 2 (one refresh)", n)
		}
		if ups, sent := fake.Uploads(), fake.Sent(); len(ups) != 2 || len(sent) != 2 || sent[1].PhotoURL != ups[1].MediaID {
			t.Fatalf("uploads %d, sent %+v", len(ups), sent)
		}
	})

	t.Run("ErrRefusedPermanent", func(t *testing.T) {
		fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
		r := testRobot(t, fake, newClock(), nil, nil)
		fake.Fail("/v1.0/robot/groupMessages/send", 1, 400, "InvalidParameter")
		_, err := r.send(withTimeout(t, 10*time.Second), image(addr(t, replyTo{Group: true, Conversation: "c2"}), chantest.NoisePNG(t, 8)))
		if !errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("err = %v, want permanent", err)
		}
	})
}
