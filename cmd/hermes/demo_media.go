package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"strings"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/console"
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
		console.File{Kind: channels.MediaFile, Name: "报销单.pdf", Data: demoPDF("Expense claim 2026-11", "Taxi 86.00 CNY", "Hotel 420.00 CNY")})
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

// demoPDF is a one-page PDF with lines of text, written by hand (objects,
// their cross-reference table, the trailer).
func demoPDF(lines ...string) []byte {
	var content strings.Builder
	content.WriteString("BT /F1 14 Tf 16 TL 72 720 Td\n")
	for _, l := range lines {
		fmt.Fprintf(&content, "(%s) Tj T*\n", l)
	}
	content.WriteString("ET")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", content.Len(), content.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return []byte(b.String())
}
