package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/console"
	"github.com/hermes-gw/hermes/gateway/media/mediatest"
)

// demoAttachments sends a screenshot and a PDF, as an employee asking
// about an error and a form would: the offline model says what reached
// it (an image part, the PDF's text).
func demoAttachments(ctx context.Context, sess *consoleSession, stdout io.Writer) error {
	fmt.Fprintln(stdout, "\n== Attachments: a screenshot and a PDF ==")
	const line = "这是报错截图和报销单，帮我看看"
	fmt.Fprintf(stdout, "你> %s  [附件：报错截图.png，报销单.pdf]\n", line)
	_, err := sess.askWith(ctx, line,
		console.File{Kind: channels.MediaImage, Name: "报错截图.png", Data: demoScreenshot()},
		console.File{Kind: channels.MediaFile, Name: "报销单.pdf", Data: mediatest.TextPDF("Expense claim 2026-11", "Taxi 86.00 CNY", "Hotel 420.00 CNY")})
	return err
}

// demoScreenshot is a 320×200 PNG: a grey window with a red error bar.
func demoScreenshot() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 320, 200))
	for y := range 200 {
		for x := range 320 {
			c := color.RGBA{230, 230, 230, 255}
			if y > 80 && y < 110 {
				c = color.RGBA{200, 40, 40, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // into memory: it does not fail
	return buf.Bytes()
}
