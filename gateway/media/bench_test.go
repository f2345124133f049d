package media_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/media"
	"github.com/hermes-gw/hermes/gateway/media/mediatest"
	"github.com/hermes-gw/hermes/gateway/store"
)

// noisyPNG is an uncompressed PNG of random opaque pixels (3 bytes each)
// of about size bytes.
func noisyPNG(b *testing.B, size int) []byte {
	side := 1
	for side*side*3 < size {
		side += 16
	}
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	r := rand.New(rand.NewPCG(1, 2))
	for y := range side {
		for x := range side {
			img.Set(x, y, color.RGBA{uint8(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), 255})
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkImage5MB: a 5 MB screenshot fetched from the fake WeCom file
// server, decrypted and turned into the model's image part (a data: URL).
// peak-x is the peak heap above the start over the file's size: the
// encrypted download is decrypted in place, and the base64 URL (4/3 of
// the file) is written once, so about 2.4× is the floor.
func BenchmarkImage5MB(b *testing.B) {
	shot := noisyPNG(b, 5<<20)
	key := bytes.Repeat([]byte{0x5a}, 32)
	files := wecomtest.NewBotFileServer(b)
	url := files.Add(shot, key, "shot.png")
	bot, err := aibot.New(aibot.Config{Name: "bot", Mode: aibot.ModeWebSocket, CorpID: "corp", BotID: "id", Secret: "s",
		FetchHosts: []string{"127.0.0.1"}, FetchAllowPrivate: true}, 0, channels.Env{})
	if err != nil {
		b.Fatal(err)
	}
	ch := wecom.NewChannel().WithBots(bot)
	ref, _ := json.Marshal(map[string]string{"url": url, "aeskey": wecomtest.BotFileKey(key)})
	parts := []channels.Part{{Media: &channels.MediaRef{Kind: channels.MediaImage, Ref: ref}}}
	cfg := config.Config{}
	cfg.ApplyDefaults()
	opt := media.Options{Vision: true, Limits: cfg.Media, Words: config.DefaultMediaMessages}
	ctx := context.Background()
	var peak uint64
	b.ResetTimer()
	for b.Loop() {
		peak = max(peak, mediatest.PeakHeap(func() {
			att, err := ch.FetchMedia(ctx, "bot", *parts[0].Media, cfg.Media.MaxBytes)
			if err != nil {
				b.Fatal(err)
			}
			row := store.MediaRow{Part: 0, Kind: channels.MediaImage, Data: att.Data, MIME: "image/png", Size: int64(len(att.Data))}
			in := media.Prepare(ctx, parts, map[int]store.MediaRow{0: row}, opt)
			if in.Refusal != "" || len(in.Images) != 1 {
				b.Fatalf("prepared %+v", in)
			}
		}))
	}
	b.ReportMetric(float64(len(shot))/(1<<20), "file-MB")
	b.ReportMetric(float64(peak)/float64(len(shot)), "peak-x")
}
