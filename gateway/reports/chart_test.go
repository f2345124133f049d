package reports

import (
	"bytes"
	"image"
	"image/png"
	"strings"
	"testing"
)

// weekly is the sample report's data: Chinese labels and series names.
var weekly = Chart{Type: ChartBar, Title: "上周工单统计", Labels: []string{"网络故障", "账号权限", "硬件报修", "软件安装"},
	Series: []Series{{Name: "新建", Values: []float64{12, 7, 5, 9}}, {Name: "已解决", Values: []float64{10, 7, 3, 8}}}}

func TestRenderPNGWithChineseLabels(t *testing.T) {
	for _, typ := range []string{ChartBar, ChartLine, ChartPie} {
		t.Run(typ, func(t *testing.T) {
			c := weekly
			c.Type = typ
			b, err := RenderPNG(c)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("not a PNG: %v", err)
			}
			if got := img.Bounds().Size(); got.X != ChartWidth || got.Y != ChartHeight {
				t.Fatalf("size %v, want %dx%d", got, ChartWidth, ChartHeight)
			}
			// The title is drawn in the top band: with the embedded font it
			// has ink (with a missing font, CJK runes draw nothing).
			if v := variance(img, image.Rect(0, 0, ChartWidth, 40)); v < 50 {
				t.Errorf("title band is blank (variance %.1f)", v)
			}
			if typ != ChartPie {
				// Category labels sit under the x axis at the bottom.
				if v := variance(img, image.Rect(40, ChartHeight-40, ChartWidth, ChartHeight)); v < 50 {
					t.Errorf("label band is blank (variance %.1f)", v)
				}
			}
		})
	}
}

// TestFontDrawsCJK compares a title in Chinese with an empty one: the band
// must differ, so the glyphs came from the embedded font.
func TestFontDrawsCJK(t *testing.T) {
	c := weekly
	with, err := RenderPNG(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Title = ""
	without, err := RenderPNG(c)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := png.Decode(bytes.NewReader(with))
	b, _ := png.Decode(bytes.NewReader(without))
	band := image.Rect(0, 0, ChartWidth/2, 30)
	if variance(a, band) <= variance(b, band) {
		t.Errorf("the Chinese title drew nothing: variance %.1f vs %.1f without it", variance(a, band), variance(b, band))
	}
}

// variance is the variance of the grey level in r.
func variance(img image.Image, r image.Rectangle) float64 {
	var sum, sq, n float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			g := float64(cr+cg+cb) / 3 / 257
			sum += g
			sq += g * g
			n++
		}
	}
	m := sum / n
	return sq/n - m*m
}

func TestBadChart(t *testing.T) {
	for name, c := range map[string]Chart{
		"type":    {Type: "radar", Labels: []string{"a"}, Series: []Series{{Values: []float64{1}}}},
		"labels":  {Type: ChartBar, Series: []Series{{Values: []float64{1}}}},
		"lengths": {Type: ChartBar, Labels: []string{"a", "b"}, Series: []Series{{Values: []float64{1}}}},
	} {
		if _, err := RenderPNG(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestTable(t *testing.T) {
	got := Table(weekly)
	for _, want := range []string{"| 上周工单统计 | 新建 | 已解决 |", "| --- | --- | --- |", "| 网络故障 | 12 | 10 |"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

func BenchmarkRenderBarChart(b *testing.B) {
	var size int
	for b.Loop() {
		png, err := RenderPNG(weekly)
		if err != nil {
			b.Fatal(err)
		}
		size = len(png)
	}
	b.ReportMetric(float64(size), "png-bytes")
}
