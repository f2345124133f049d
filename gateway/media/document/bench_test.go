package document

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/media/mediatest"
)

// bigTextPDF writes a PDF of about size bytes: pages of 60 lines of text
// in uncompressed content streams, so nearly every byte is text to
// extract (the worst case of text per file byte).
func bigTextPDF(size int) []byte {
	d := &pdfDoc{}
	catalog, pages := d.add(""), d.add("")
	font := d.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	var kids []string
	line := "The quick brown fox jumps over the lazy dog, line %d of page %d."
	for n, total := 1, 0; total < size; n++ {
		var b strings.Builder
		b.WriteString("BT /F1 10 Tf 12 TL 50 760 Td\n")
		for i := range 60 {
			fmt.Fprintf(&b, "(%s) Tj T*\n", fmt.Sprintf(line, i+1, n))
		}
		b.WriteString("ET\n")
		content := d.add(streamObj("", b.String()))
		page := d.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>", pages, content))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
		total += b.Len() + 150
	}
	d.set(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pages))
	d.set(pages, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d /Resources << /Font << /F1 %d 0 R >> >> >>", strings.Join(kids, " "), len(kids), font))
	return d.bytes(catalog)
}

// BenchmarkExtractPDF20MB extracts a 20 MB text PDF and reports, beside
// ns/op, peak-MB (mediatest.PeakHeap: heap held above the input file, which the
// caller holds anyway) and peak/file (that peak over the file size; the
// target is at most 3). "all" reads every page (MaxChars unlimited, about
// 17 M characters); "defaults" stops at the default 20000 characters.
func BenchmarkExtractPDF20MB(b *testing.B) {
	data := bigTextPDF(20 << 20)
	for _, bc := range []struct {
		name string
		lim  Limits
	}{
		{"all", Limits{MaxChars: math.MaxInt32, MaxUncompressed: 1 << 30, ParseTimeout: time.Minute}},
		{"defaults", Limits{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			var worst uint64
			var res Result
			for b.Loop() {
				res = Result{} // the last text is not live during the next run
				var err error
				peak := mediatest.PeakHeap(func() { res, err = Extract(context.Background(), data, "", bc.lim) })
				if err != nil {
					b.Fatal(err)
				}
				worst = max(worst, peak)
			}
			b.ReportMetric(float64(worst)/(1<<20), "peak-MB")
			b.ReportMetric(float64(worst)/float64(len(data)), "peak/file")
			b.ReportMetric(float64(len(data))/(1<<20), "file-MB")
			b.ReportMetric(float64(res.Pages), "pages")
			b.ReportMetric(float64(res.Chars), "chars")
		})
	}
}
