package feishu_test

import (
	"crypto/sha256"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

func imagePart(rt []byte, key string, pic []byte) channels.Outbound {
	return channels.Outbound{Account: testAccount, ReplyTo: rt, Format: channels.FormatImage,
		Image: &channels.Image{Name: "tickets.png", PNG: pic}, Parts: 1, Key: key}
}

func TestSendImage(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		api := feishutest.NewServer(t, testAppID, testSecret)
		ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{})
		if !ch.Limits(testAccount).Images {
			t.Fatal("Limits.Images = false")
		}
		// A streaming card cannot show an image: it goes at once.
		rt := []byte(`{"message_id":"om_1","chat_id":"oc_group_1","group":true,"open_id":"ou","stream":true,"received_ms":` +
			strconv.FormatInt(time.Now().UnixMilli(), 10) + `}`)
		pic := chantest.NoisePNG(t, 300)
		out := imagePart(rt, "report:1/0", pic)
		out.Answer = true
		res, err := ch.Send(withTimeout(t, 10*time.Second), out)
		if err != nil {
			t.Fatal(err)
		}
		imgs := api.Images()
		if len(imgs) != 1 {
			t.Fatalf("%d uploads, want 1", len(imgs))
		}
		img := imgs[0]
		if sha256.Sum256(img.Data) != sha256.Sum256(pic) || img.Type != "message" || img.Filename != "tickets.png" {
			t.Fatalf("upload %s %q of %d bytes, want the picture's %d", img.Type, img.Filename, len(img.Data), len(pic))
		}
		got := api.Delivered()
		if len(got) != 1 || got[0].To != "om_1" || got[0].MsgType != "image" || got[0].Text() != "image:"+img.Key || got[0].UUID == "" {
			t.Fatalf("replies %+v, want one image %s", got, img.Key)
		}
		if res.MessageID != got[0].MessageID {
			t.Fatalf("MessageID %q, want %q", res.MessageID, got[0].MessageID)
		}
	})

	t.Run("RetrySuppressedByUUID", func(t *testing.T) {
		api := feishutest.NewServer(t, testAppID, testSecret)
		ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{})
		rt := []byte(`{"message_id":"om_1","chat_id":"oc","open_id":"ou"}`)
		ctx := withTimeout(t, 10*time.Second)
		for attempt := range 2 {
			out := imagePart(rt, "report:2/0", chantest.NoisePNG(t, 20))
			out.Attempt = attempt
			if _, err := ch.Send(ctx, out); err != nil {
				t.Fatal(err)
			}
		}
		if all, shown := api.Replies(), api.Delivered(); len(all) != 2 || len(shown) != 1 {
			t.Fatalf("%d replies, %d shown; want 2 and 1", len(all), len(shown))
		}
	})

	t.Run("ErrOversize", func(t *testing.T) {
		api := feishutest.NewServer(t, testAppID, testSecret)
		ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{})
		big := append(chantest.NoisePNG(t, 8), make([]byte, feishu.MaxImageBytes)...)
		_, err := ch.Send(withTimeout(t, 10*time.Second), imagePart([]byte(`{"message_id":"om_1"}`), "k", big))
		if !errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("err = %v, want permanent", err)
		}
		if n := len(api.Images()) + api.TokenRequests(); n != 0 {
			t.Fatalf("%d calls reached Feishu, want none", n)
		}
	})

	t.Run("RefreshesExpiredTokenOnUpload", func(t *testing.T) {
		api := feishutest.NewServer(t, testAppID, testSecret)
		ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{})
		rt := []byte(`{"message_id":"om_1","chat_id":"oc","open_id":"ou"}`)
		ctx := withTimeout(t, 10*time.Second)
		if _, err := ch.Send(ctx, imagePart(rt, "k1", chantest.NoisePNG(t, 10))); err != nil {
			t.Fatal(err)
		}
		api.InvalidateTokens()
		if _, err := ch.Send(ctx, imagePart(rt, "k2", chantest.NoisePNG(t, 11))); err != nil {
			t.Fatalf("send after invalidation: %v", err)
		}
		if n := api.TokenRequests(); n != 2 {
			t.Fatalf("%d token requests, want 2 (one refresh)", n)
		}
		if imgs, got := api.Images(), api.Delivered(); len(imgs) != 2 || len(got) != 2 || got[1].Text() != "image:"+imgs[1].Key {
			t.Fatalf("%d uploads, replies %+v", len(imgs), got)
		}
	})
}

// BenchmarkSendImage: upload and reply of a 128×128 noise PNG (about
// 64 KB, a chart's size) against the fake, token cached.
func BenchmarkSendImage(b *testing.B) {
	api := feishutest.NewServer(b, testAppID, testSecret)
	ch := newChannel(b, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{Logger: testLogger(b)})
	rt := []byte(`{"message_id":"om_1","chat_id":"oc","open_id":"ou"}`)
	pic := chantest.NoisePNG(b, 128)
	ctx := withTimeout(b, time.Minute)
	b.SetBytes(int64(len(pic)))
	i := 0
	for b.Loop() {
		i++
		if _, err := ch.Send(ctx, imagePart(rt, "bench/"+strconv.Itoa(i), pic)); err != nil {
			b.Fatal(err)
		}
	}
}
