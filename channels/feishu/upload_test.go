package feishu_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

// The delivery layer uploads an image once (Upload) and sends every
// attempt with its image_key: a retry uploads nothing.
func TestUploadThenSendByImageKey(t *testing.T) {
	api := feishutest.NewServer(t, testAppID, testSecret)
	ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{})
	ctx := withTimeout(t, 10*time.Second)
	img := &channels.Image{Name: "tickets.png", PNG: chantest.NoisePNG(t, 50)}
	media, err := ch.Upload(ctx, testAccount, img)
	if err != nil {
		t.Fatal(err)
	}
	if imgs := api.Images(); len(imgs) != 1 || media.ID != imgs[0].Key || media.Lifetime != 0 {
		t.Fatalf("Upload = %+v after %d uploads, want the key of the one upload, kept for good", media, len(imgs))
	}
	rt := []byte(`{"message_id":"om_1","chat_id":"oc","open_id":"ou"}`)
	for attempt := range 2 {
		out := imagePart(rt, "report:7/0", img.PNG)
		out.MediaID, out.Attempt = media.ID, attempt
		if _, err := ch.Send(ctx, out); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(api.Images()); n != 1 {
		t.Fatalf("%d uploads, want the one of Upload", n)
	}
	if got := api.Delivered(); len(got) != 1 || got[0].Text() != "image:"+media.ID {
		t.Fatalf("delivered %+v, want the image %s once", got, media.ID)
	}
	if _, err := ch.Upload(ctx, "nobody", img); !errors.Is(err, channels.ErrPermanent) {
		t.Fatalf("Upload for an unknown account: %v, want ErrPermanent", err)
	}
}
