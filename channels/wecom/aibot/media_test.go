package aibot_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// pushTo is a websocket bot's reply address for a report to a group chat.
func pushTo(mode string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"mode": mode, "chat_id": "wrGroup1", "chat_type": "group",
		"user_id": "lisi", "msg_id": "m-report", "received": botT0.Unix()})
	return b
}

func TestBotWS_SendImage(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		w := startWSBot(t, wsOpts{})
		w.waitLogged(t, "long connection subscribed") // the bot holds the socket
		if !w.ch.Limits(botName).Images {
			t.Fatal("Limits.Images = false for a websocket bot")
		}
		pic := chantest.NoisePNG(t, 600) // about 1.4 MB: three chunks
		_, err := w.ch.Send(waitCtx(t), channels.Outbound{Account: botName, ReplyTo: pushTo(aibot.ModeWebSocket),
			Format: channels.FormatImage, Image: &channels.Image{Name: "tickets.png", PNG: pic}, Parts: 1})
		if err != nil {
			t.Fatal(err)
		}
		ups := w.srv.Uploads()
		if len(ups) != 1 {
			t.Fatalf("%d uploads, want 1", len(ups))
		}
		up := ups[0]
		if sha256.Sum256(up.Data) != sha256.Sum256(pic) || up.Type != "image" || up.Filename != "tickets.png" || up.Chunks != 3 {
			t.Fatalf("upload %s %q in %d chunks, %d bytes; want the picture's %d in 3", up.Type, up.Filename, up.Chunks, len(up.Data), len(pic))
		}
		f := w.frame(t, func(f wecomtest.BotFrame) bool { return f.Cmd == "aibot_send_msg" })
		if f.Reply.ChatID != "wrGroup1" || f.Reply.MsgType != "image" || f.Reply.Image.MediaID != up.MediaID {
			t.Fatalf("aibot_send_msg = %+v, want image %q", f.Reply, up.MediaID)
		}
	})

	t.Run("ErrOversize", func(t *testing.T) {
		w := startWSBot(t, wsOpts{})
		w.waitLogged(t, "long connection subscribed") // the bot holds the socket
		big := append(chantest.NoisePNG(t, 8), make([]byte, aibot.BotMaxImageBytes)...)
		_, err := w.ch.Send(waitCtx(t), channels.Outbound{Account: botName, ReplyTo: pushTo(aibot.ModeWebSocket),
			Format: channels.FormatImage, Image: &channels.Image{Name: "big.png", PNG: big}, Parts: 1})
		if !errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("err = %v, want permanent", err)
		}
		if n := len(w.srv.Uploads()) + len(w.srv.Frames()); n != 0 {
			t.Fatalf("%d uploads and frames, want none", n)
		}
	})

	t.Run("ErrUploadRefused", func(t *testing.T) {
		w := startWSBot(t, wsOpts{})
		w.waitLogged(t, "long connection subscribed") // the bot holds the socket
		w.srv.FailNext("aibot_upload_media_init", 40058)
		_, err := w.ch.Send(waitCtx(t), channels.Outbound{Account: botName, ReplyTo: pushTo(aibot.ModeWebSocket),
			Format: channels.FormatImage, Image: &channels.Image{Name: "c.png", PNG: chantest.NoisePNG(t, 8)}, Parts: 1})
		var apiErr *wxbiz.APIError
		if !errors.Is(err, channels.ErrPermanent) || !errors.As(err, &apiErr) || apiErr.Code != 40058 {
			t.Fatalf("err = %v, want permanent errcode 40058", err)
		}
		if len(w.srv.Frames()) != 0 {
			t.Fatalf("sent %+v after a refused upload", w.srv.Frames())
		}
	})

	t.Run("ErrNoSocketRetryable", func(t *testing.T) {
		bot, err := aibot.New(aibot.Config{Name: botName, Mode: aibot.ModeWebSocket, CorpID: botCorpID,
			BotID: wsBotID, Secret: wsSecret, URL: "ws://127.0.0.1:1"}, 0, channels.Env{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bot.Send(context.Background(), channels.Outbound{Account: botName, ReplyTo: pushTo(aibot.ModeWebSocket),
			Format: channels.FormatImage, Image: &channels.Image{Name: "c.png", PNG: chantest.NoisePNG(t, 8)}, Parts: 1})
		if err == nil || errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("err = %v, want a retryable error", err)
		}
	})
}

func TestBotCallback_ImageRefused(t *testing.T) {
	f := newCallbackBot(t)
	if f.ch.Limits(botName).Images {
		t.Fatal("Limits.Images = true for a callback-mode bot")
	}
	_, err := f.ch.Send(context.Background(), channels.Outbound{Account: botName, ReplyTo: pushTo(aibot.ModeCallback),
		Format: channels.FormatImage, Image: &channels.Image{Name: "c.png", PNG: chantest.NoisePNG(t, 8)}, Parts: 1, Answer: true})
	if !errors.Is(err, channels.ErrPermanent) || !strings.Contains(err.Error(), "markdown only") {
		t.Fatalf("err = %v, want permanent, naming response_url's markdown-only rule", err)
	}
}
