package document

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestExtractPDF(t *testing.T) {
	res := mustExtract(t, twoPagePDF(), "scan.jpg", Limits{})
	want := "[page 1]\nQuarterly report\nRevenue grew (a lot).\n\n[page 2]\nSecond page\nThe end."
	if res.Kind != PDF || res.Pages != 2 || res.Text != want || res.Truncated {
		t.Fatalf("got %d pages, Text = %q, want %q", res.Pages, res.Text, want)
	}
}

func TestExtractPDFLayout(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"GapIsSpace", "BT /F1 12 Tf 72 700 Td (Hello) Tj 40 0 Td (World) Tj ET", "Hello World"},
		{"KernIsNotSpace", "BT /F1 12 Tf 72 700 Td [(Hel) -20 (lo)] TJ ET", "Hello"},
		{"WideKernIsSpace", "BT /F1 12 Tf 72 700 Td [(Hello) -400 (World)] TJ ET", "Hello World"},
		{"TextObjectsOnOneLine", "BT /F1 12 Tf 72 700 Td (left) Tj ET BT /F1 12 Tf 200 700 Td (right) Tj ET", "left right"},
		{"CTMMovesLines", "q 1 0 0 1 0 0 cm BT /F1 12 Tf 72 700 Td (one) Tj ET Q q 1 0 0 1 0 -20 cm BT /F1 12 Tf 72 700 Td (two) Tj ET Q", "one\ntwo"},
		{"CIDFontToUnicode", "BT /F2 12 Tf 72 700 Td <00010002> Tj <00030004> Tj ET", "中文测试"},
		{"CIDFontLargeRange", "BT /F2 12 Tf 72 700 Td <10001001> Tj <1FFF2000> Tj ET", "一丁\u5dff"},
		{"InlineImage", "BI /W 4 /H 1 /BPC 8 /CS /G ID \x00(Tj) Tj\xffE EI\nBT /F1 12 Tf 72 700 Td (after) Tj ET", "after"},
		{"NoFont", "BT 72 700 Td (plain) Tj ET", "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustExtract(t, pdfPages(tt.content), "", Limits{})
			if got := strings.TrimPrefix(res.Text, "[page 1]\n"); got != tt.want {
				t.Fatalf("Text = %q, want %q", res.Text, tt.want)
			}
		})
	}
}

// formPDF puts its text in a form XObject with its own font resources.
func formPDF() []byte {
	d := &pdfDoc{}
	catalog, pages := d.add(""), d.add("")
	helv := d.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	form := d.add(streamObj(fmt.Sprintf("/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /FX %d 0 R >> >>", helv),
		"BT /FX 10 Tf 72 50 Td (footer in a form) Tj ET"))
	content := d.add(streamObj("", "q /Fm1 Do Q"))
	page := d.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R /Resources << /XObject << /Fm1 %d 0 R >> >> >>", pages, content, form))
	d.set(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pages))
	d.set(pages, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", page))
	return d.bytes(catalog)
}

func TestExtractPDFForm(t *testing.T) {
	res := mustExtract(t, formPDF(), "", Limits{})
	if res.Text != "[page 1]\nfooter in a form" {
		t.Fatalf("Text = %q", res.Text)
	}
}

func TestExtractPDFHeaderAndTrailerJunk(t *testing.T) {
	pdf := twoPagePDF()
	v20 := bytes.Replace(pdf, []byte("%PDF-1.4"), []byte("%PDF-2.0"), 1)
	for name, data := range map[string][]byte{
		"LeadingWhitespace": append([]byte("\n\n  "), pdf...),
		"TrailingJunk":      append(append([]byte{}, pdf...), "\x00\x00mail footer\r\n"...),
		"PDF2.0":            v20,
	} {
		res, err := extract(t, data, "", Limits{})
		if err != nil || res.Pages != 2 || !strings.Contains(res.Text, "The end.") {
			t.Errorf("%s: %+v, %v", name, res, err)
		}
	}
}

func TestExtractPDFErrScanned(t *testing.T) {
	_, err := extract(t, imageOnlyPDF(), "", Limits{})
	wantErr(t, err, ErrScanned)
	t.Run("CIDFontWithoutMap", func(t *testing.T) {
		// F2 without its ToUnicode map: Identity-H codes are glyph ids.
		d := pdfPages("BT /F2 12 Tf 72 700 Td <00010002> Tj ET")
		d = bytes.Replace(d, []byte("/ToUnicode 4 0 R"), []byte("/ToUnicodX 4 0 R"), 1)
		_, err := extract(t, d, "", Limits{})
		wantErr(t, err, ErrScanned)
	})
}

func TestExtractPDFErrCorrupt(t *testing.T) {
	pdf := twoPagePDF()
	xref := bytes.LastIndex(pdf, []byte("startxref\n"))
	cases := map[string][]byte{
		"Half":          pdf[:len(pdf)/2],
		"NoTrailer":     pdf[:xref],
		"HeaderOnly":    []byte("%PDF-1.7\n"),
		"Garbage":       append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("\xde\xad\xbe\xef"), 300)...),
		"BadStartxref":  append(append([]byte{}, pdf[:xref]...), "startxref\n99\n%%EOF\n"...),
		"UnknownFilter": pdfPages("x"),
	}
	cases["UnknownFilter"] = bytes.ReplaceAll(cases["UnknownFilter"], []byte("/Filter /FlateDecode"), []byte("/Filter /NoSuchDecode"))
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := extract(t, data, "", Limits{})
			wantErr(t, err, ErrCorrupt)
		})
	}
	t.Run("EveryCut", func(t *testing.T) {
		for n := 0; n < len(pdf); n += 37 {
			if _, err := extract(t, pdf[:n], "", Limits{}); err == nil && n < xref {
				t.Fatalf("cut at %d: no error", n)
			}
		}
	})
}

// withTrailer rewrites the fixture's trailer or xref text, which come
// after every object, so the offsets stay right.
func withTrailer(old, new string) []byte {
	return bytes.Replace(twoPagePDF(), []byte(old), []byte(new), 1)
}

// withObject adds an object that nothing refers to: the checks scan the
// whole file, since the library may be steered to read any offset.
func withObject(body string) []byte {
	d := &pdfDoc{}
	catalog, pages := d.add(""), d.add("")
	content := d.add(streamObj("", linesContent("text")))
	page := d.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R >>", pages, content))
	d.set(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pages))
	d.set(pages, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", page))
	d.add(body)
	return d.bytes(catalog)
}

func TestExtractPDFErrBomb(t *testing.T) {
	if _, err := extract(t, withObject("<< /N 3 /Columns 5 >>"), "", Limits{}); err != nil {
		t.Fatalf("control: %v", err)
	}
	cases := map[string][]byte{
		"Size":       withTrailer("<< /Size ", "<< /Size 999999999999 /X "),
		"Subsection": withTrailer("xref\n0 ", "xref\n4000000000 "),
		"Columns":    withObject(streamObj("/Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 99999999999 >>", "x")),
		"ColumnsRef": withObject(streamObj("/Filter /FlateDecode /DecodeParms << /Predictor 12 /Col#75mns 3 0 R >>", "x")),
		"ObjStmN":    withObject(streamObj("/Type /ObjStm /N 999999999999 /First 10", "x")),
		"ParmsRef":   withObject(streamObj("/Filter /FlateDecode /DecodeParms [null 3 0 R]", "x")),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := extract(t, data, "", Limits{})
			wantErr(t, err, ErrBomb)
		})
	}
	t.Run("DenseNames", func(t *testing.T) {
		// Each "/N" is followed by a string holding all the others.
		data := withObject(streamObj("", strings.Repeat("/N (", 100000)))
		start := time.Now()
		_, err := extract(t, data, "", Limits{})
		wantErr(t, err, ErrBomb)
		if el := time.Since(start); el > time.Second {
			t.Errorf("took %v", el)
		}
	})
	t.Run("DecodedContentBudget", func(t *testing.T) {
		big := strings.Repeat("0 0 m 10 10 l S\n", 1<<16) // 1 MB of drawing, no text
		_, err := extract(t, pdfPages(big), "", Limits{MaxUncompressed: 64 << 10})
		wantErr(t, err, ErrBomb)
	})
}

func TestExtractPDFTruncated(t *testing.T) {
	var pages []string
	for i := range 50 {
		pages = append(pages, linesContent(fmt.Sprintf("第%d页 page %d", i+1, i+1), strings.Repeat("text ", 40)))
	}
	res := mustExtract(t, pdfPages(pages...), "", Limits{MaxChars: 500})
	if !res.Truncated || res.Chars > 500 || res.Pages != 50 || !strings.HasSuffix(res.Text, "[truncated]") {
		t.Fatalf("got Pages %d, Chars %d, Truncated %v, %q", res.Pages, res.Chars, res.Truncated, res.Text)
	}
	if strings.Contains(res.Text, "[page 5]") {
		t.Fatalf("read past the budget: %q", res.Text)
	}
}

// waitSlotsFree fails unless every PDF parse, abandoned ones included,
// gives its slot back.
func waitSlotsFree(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		for range cap(pdfSlots) {
			pdfSlots <- struct{}{}
		}
		for range cap(pdfSlots) {
			<-pdfSlots
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an abandoned PDF parse still holds its slot")
	}
}

func TestExtractPDFErrTimeout(t *testing.T) {
	// 48 MB of drawing operators inflate from a small file; reading them
	// takes far longer than the 20 ms budget.
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	op := strings.Repeat("1 0 0 1 0 0 cm 0 0 m 10 10 l S\n", 1<<10)
	for range 1536 {
		w.Write([]byte(op))
	}
	w.Close()
	d := &pdfDoc{}
	catalog, pages := d.add(""), d.add("")
	content := d.add(streamObj("/Filter /FlateDecode", z.String()))
	page := d.add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /Contents %d 0 R >>", pages, content))
	d.set(catalog, fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pages))
	d.set(pages, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", page))
	start := time.Now()
	_, err := extract(t, d.bytes(catalog), "", Limits{ParseTimeout: 20 * time.Millisecond, MaxUncompressed: 1 << 30})
	wantErr(t, err, ErrTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to match context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("returned after %v", el)
	}
	waitSlotsFree(t)
}

func TestPDFFileStops(t *testing.T) {
	var stop atomic.Bool
	f := newPDFFile([]byte("%PDF-2.0 comment\n1 0 obj"), &stop)
	p := make([]byte, 9)
	if n, err := f.ReadAt(p, 0); n != 9 || err != nil || string(p) != "%PDF-1.7\n" {
		t.Fatalf("ReadAt = %d, %v, %q", n, err, p)
	}
	stop.Store(true)
	if _, err := f.ReadAt(p, 0); !errors.Is(err, errStopped) {
		t.Fatalf("after stop: err = %v", err)
	}
}

func TestExtractPDFObjectStreams(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		res := mustExtract(t, objStmPDF(""), "", Limits{})
		if res.Text != "[page 1]\nin an object stream" {
			t.Fatalf("Text = %q", res.Text)
		}
	})
	// Without the check, each of these recurses in the library until the
	// process dies of a stack overflow.
	cases := map[string][]byte{
		"Cycle":            xrefStreamPDF(map[int]string{1: "<< /Type /Catalog /Pages 3 0 R >>"}, map[int]int{3: 4, 4: 3}),
		"DictRefersInside": objStmPDF("/Length2 3 0 R"),
		"ExtendsInside": xrefStreamPDF(map[int]string{
			1: "<< /Type /Catalog /Pages 3 0 R >>",
			4: streamObj("/Type /ObjStm /N 1 /First 4 /Extends 7 0 R", "9 0 null"),
			7: streamObj("/Type 3 0 R /N 1 /First 4", "9 0 null"),
		}, map[int]int{3: 4}),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := extract(t, data, "", Limits{})
			wantErr(t, err, ErrCorrupt)
		})
	}
}
