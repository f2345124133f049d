package document

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
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

// peakHeap runs f and returns the most heap memory it held above what was
// in use before it: "/memory/classes/heap/objects:bytes" (live objects
// plus garbage not yet swept, so what the process really holds, GC pacing
// included) sampled every 100 µs, minus its value after a GC before f.
func peakHeap(f func()) uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	metrics.Read(s)
	base := s[0].Value.Uint64()
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		peak := base
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	return <-done - base
}

// BenchmarkExtractPDF20MB extracts a 20 MB text PDF and reports, beside
// ns/op, peak-MB (peakHeap: heap held above the input file, which the
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
				peak := peakHeap(func() { res, err = Extract(context.Background(), data, "", bc.lim) })
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
