package document

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzExtract feeds Extract every fixture kind, mutated. It must never
// panic, must return within its 2 s ParseTimeout (with slack for a loaded
// machine), and must return either a bounded, valid text or one of the
// sentinel errors.
func FuzzExtract(f *testing.F) {
	f.Add(twoPagePDF(), false)
	f.Add(imageOnlyPDF(), false)
	f.Add(formPDF(), false)
	f.Add(objStmPDF(""), false)
	f.Add(pdfPages("BT /F2 12 Tf 72 700 Td <00010002> Tj ET BI /W 1 ID \x00 EI"), false)
	f.Add(sampleDOCX(f), false)
	f.Add(sampleXLSX(f), false)
	f.Add(bombZip(f, 100, 1<<20), false)
	f.Add(zip64Of(sampleXLSX(f)), false)
	f.Add(docxOf(f, strings.Repeat("<w:p/>", 200)+`<w:p><w:r><w:t>x</w:t></w:r></w:p>`), false)
	f.Add([]byte("名称,数量\n\"a,b\",1\n"), true)
	f.Add([]byte("# 标题\n正文 text\n"), false)
	f.Add([]byte("\xc4\xe3\xba\xc3"), false) // 你好 in GBK
	lim := Limits{MaxChars: 2000, MaxUncompressed: 4 << 20, MaxEntries: 200, ParseTimeout: 2 * time.Second}
	sentinels := []error{ErrUnsupported, ErrCorrupt, ErrScanned, ErrBomb, ErrTooComplex, ErrTimeout, ErrEmpty, ErrEncrypted}
	f.Fuzz(func(t *testing.T, data []byte, csv bool) {
		name := "upload.txt"
		if csv {
			name = "upload.csv"
		}
		start := time.Now()
		res, err := Extract(context.Background(), data, name, lim)
		if el := time.Since(start); el > lim.ParseTimeout+time.Second {
			t.Fatalf("took %v, budget %v", el, lim.ParseTimeout)
		}
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error without a sentinel: %v", err)
		}
		if res.Chars > lim.MaxChars || res.Chars != utf8.RuneCountInString(res.Text) || !utf8.ValidString(res.Text) {
			t.Fatalf("Chars %d (limit %d), runes %d, valid %v", res.Chars, lim.MaxChars, utf8.RuneCountInString(res.Text), utf8.ValidString(res.Text))
		}
	})
}
