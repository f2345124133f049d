package chantest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"
)

// NoisePNG encodes an n×n picture of random pixels (seeded, so the same
// every run). Noise does not compress: the PNG is a little over 4·n²
// bytes, which lets a test pick a size (n = 600: about 1.4 MB).
func NoisePNG(t testing.TB, n int) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 2))
	img := image.NewRGBA(image.Rect(0, 0, n, n))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.Uint32())
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PNG encodes a w×h picture, blank but for one red pixel.
func PNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
