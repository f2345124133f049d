package wecom_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

func (f *sendFixture) sendImage(t *testing.T, to string, img *channels.Image) (channels.SendResult, error) {
	t.Helper()
	return f.ch.Send(context.Background(), channels.Outbound{
		Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo(to), Format: channels.FormatImage, Image: img, Parts: 1,
	})
}

func TestApp_SendImage(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := newSendFixture(t, fixtureOpts{})
		if !f.ch.Limits(f.app.Name()).Images {
			t.Fatal("Limits.Images = false for an app")
		}
		pic := chantest.NoisePNG(t, 320)
		res, err := f.sendImage(t, "zhangsan", &channels.Image{Name: "reports/工单.png", PNG: pic})
		if err != nil {
			t.Fatal(err)
		}
		ups := f.srv.Uploads()
		if len(ups) != 1 {
			t.Fatalf("%d uploads, want 1", len(ups))
		}
		up := ups[0]
		if sha256.Sum256(up.Data) != sha256.Sum256(pic) || up.Type != "image" || up.Filename != "工单.png" {
			t.Fatalf("upload: type %q filename %q, %d bytes (want %d, same hash)", up.Type, up.Filename, len(up.Data), len(pic))
		}
		msgs := f.srv.Messages()
		if len(msgs) != 1 || msgs[0].MsgType != "image" || msgs[0].MediaID != up.MediaID || msgs[0].ToUser != "zhangsan" {
			t.Fatalf("delivered %+v, want one image with media_id %q", msgs, up.MediaID)
		}
		if res.MessageID != msgs[0].MsgID {
			t.Fatalf("MessageID %q, want %q", res.MessageID, msgs[0].MsgID)
		}
	})

	t.Run("ErrOversize", func(t *testing.T) {
		f := newSendFixture(t, fixtureOpts{})
		big := append(chantest.NoisePNG(t, 8), make([]byte, wecom.MaxImageBytes)...)
		_, err := f.sendImage(t, "zhangsan", &channels.Image{Name: "big.png", PNG: big})
		if !errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("err = %v, want permanent", err)
		}
		if n := len(f.srv.Uploads()) + f.srv.TokenRequests(); n != 0 {
			t.Fatalf("%d calls reached WeCom, want none", n)
		}
	})

	t.Run("ErrNotPNG", func(t *testing.T) {
		f := newSendFixture(t, fixtureOpts{})
		for _, img := range []*channels.Image{nil, {Name: "x.png", PNG: []byte("GIF89a......")}} {
			if _, err := f.sendImage(t, "zhangsan", img); !errors.Is(err, channels.ErrPermanent) {
				t.Fatalf("image %v: err = %v, want permanent", img, err)
			}
		}
	})

	t.Run("RefreshesExpiredTokenOnUpload", func(t *testing.T) {
		f := newSendFixture(t, fixtureOpts{})
		if _, err := f.send(t, "zhangsan", "first"); err != nil {
			t.Fatal(err)
		}
		f.srv.InvalidateTokens()
		pic := chantest.NoisePNG(t, 64)
		if _, err := f.sendImage(t, "zhangsan", &channels.Image{Name: "c.png", PNG: pic}); err != nil {
			t.Fatalf("send after invalidation: %v", err)
		}
		if n := f.srv.TokenRequests(); n != 2 {
			t.Fatalf("%d token requests, want 2 (one refresh)", n)
		}
		if ups := f.srv.Uploads(); len(ups) != 1 || !bytes.Equal(ups[0].Data, pic) {
			t.Fatalf("%d uploads, want 1 with the picture", len(ups))
		}
		if msgs := f.srv.Messages(); len(msgs) != 2 || msgs[1].MsgType != "image" {
			t.Fatalf("delivered %+v", msgs)
		}
	})

	t.Run("ErrUnknownRecipientPermanent", func(t *testing.T) {
		f := newSendFixture(t, fixtureOpts{})
		f.srv.FailNextSends(81013, 1)
		_, err := f.sendImage(t, "nobody", &channels.Image{Name: "c.png", PNG: chantest.NoisePNG(t, 8)})
		var apiErr *wxbiz.APIError
		if !errors.Is(err, channels.ErrPermanent) || !errors.As(err, &apiErr) || apiErr.Op != "message/send" {
			t.Fatalf("err = %v, want permanent message/send APIError", err)
		}
	})
}

// BenchmarkApp_SendImage: upload and send of a 128×128 noise PNG (about
// 64 KB, a chart's size) against the fake, token cached.
func BenchmarkApp_SendImage(b *testing.B) {
	f := newSendFixture(b, fixtureOpts{})
	img := &channels.Image{Name: "c.png", PNG: chantest.NoisePNG(b, 128)}
	ctx := context.Background()
	b.SetBytes(int64(len(img.PNG)))
	for b.Loop() {
		if _, err := f.ch.Send(ctx, channels.Outbound{Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo("zhangsan"),
			Format: channels.FormatImage, Image: img, Parts: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
