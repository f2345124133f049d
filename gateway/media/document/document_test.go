package document

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/encoding/simplifiedchinese"
)

func extract(t *testing.T, data []byte, name string, lim Limits) (Result, error) {
	t.Helper()
	return Extract(context.Background(), data, name, lim)
}

func mustExtract(t *testing.T, data []byte, name string, lim Limits) Result {
	t.Helper()
	res, err := extract(t, data, name, lim)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if res.Chars != utf8.RuneCountInString(res.Text) {
		t.Errorf("Chars = %d, want %d", res.Chars, utf8.RuneCountInString(res.Text))
	}
	return res
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func gbk(t *testing.T, s string) []byte {
	t.Helper()
	b, err := simplifiedchinese.GBK.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSniff(t *testing.T) {
	other := zipOf(t, zipEntry{"readme.txt", "hi"})
	tests := []struct {
		name string
		data []byte
		file string
		want Kind
		err  error
	}{
		{"PDF", twoPagePDF(), "a.docx", PDF, nil},
		{"PDFAfterWhitespace", append([]byte("\r\n \t"), twoPagePDF()...), "", PDF, nil},
		{"PDFAfterJunk", append([]byte("junk"), twoPagePDF()...), "x.pdf", "", ErrUnsupported},
		{"DOCX", sampleDOCX(t), "a.pdf", DOCX, nil},
		{"XLSX", sampleXLSX(t), "", XLSX, nil},
		{"TruncatedDOCX", sampleDOCX(t)[:len(sampleDOCX(t))/2], "", DOCX, nil},
		{"OtherZip", other, "a.docx", "", ErrUnsupported},
		{"Text", []byte("# Title\n\nSome *markdown*."), "notes.md", Text, nil},
		{"CSVByName", []byte("a,b\n1,2\n"), "Data.CSV", CSV, nil},
		{"CSVNameOnBinary", []byte("a,b\x00\x01"), "data.csv", "", ErrUnsupported},
		{"GBK", gbk(t, "你好，世界"), "", Text, nil},
		{"PNG", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "x.txt", "", ErrUnsupported},
		{"ControlBytes", []byte(strings.Repeat("\x01\x02ab", 100)), "", "", ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Sniff(tt.data, tt.file)
			if tt.err != nil {
				wantErr(t, err, tt.err)
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Sniff = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestExtractText(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		res := mustExtract(t, []byte("\xEF\xBB\xBF# 标题\r\n\r\n\r\n\r\nbody text\n"), "a.md", Limits{})
		if res.Kind != Text || res.Text != "# 标题\n\nbody text" || res.Truncated {
			t.Fatalf("got %+v", res)
		}
	})
	t.Run("GBK", func(t *testing.T) {
		res := mustExtract(t, gbk(t, "报销制度：每月5日前提交。\n"), "制度.txt", Limits{})
		if res.Text != "报销制度：每月5日前提交。" {
			t.Fatalf("Text = %q", res.Text)
		}
	})
	t.Run("UTF16", func(t *testing.T) {
		res := mustExtract(t, []byte("\xFF\xFEH\x00i\x00-\x4e"), "", Limits{})
		if res.Text != "Hi中" {
			t.Fatalf("Text = %q", res.Text)
		}
	})
	t.Run("ErrEmpty", func(t *testing.T) {
		_, err := extract(t, []byte(" \n\t\r\n"), "", Limits{})
		wantErr(t, err, ErrEmpty)
	})
	t.Run("ErrUnsupportedNUL", func(t *testing.T) {
		_, err := extract(t, []byte("text\x00more"), "a.txt", Limits{})
		wantErr(t, err, ErrUnsupported)
	})
}

func TestExtractCSV(t *testing.T) {
	data := "名称,\"说明, 含逗号\",数量\n\"多行\n单元格\",x\"y,3,,\n"
	res := mustExtract(t, []byte(data), "a.csv", Limits{})
	want := "名称\t说明, 含逗号\t数量\n多行 单元格\tx\"y\t3"
	if res.Kind != CSV || res.Text != want {
		t.Fatalf("Text = %q, want %q", res.Text, want)
	}
	t.Run("GBK", func(t *testing.T) {
		res := mustExtract(t, gbk(t, "部门,人数\n研发,12\n"), "a.csv", Limits{})
		if res.Text != "部门\t人数\n研发\t12" {
			t.Fatalf("Text = %q", res.Text)
		}
	})
}

func TestTruncateAtRuneBoundary(t *testing.T) {
	body := strings.Repeat("中文字符测试", 2000)
	for _, maxChars := range []int{13, 50, 101} {
		res := mustExtract(t, []byte(body), "", Limits{MaxChars: maxChars})
		if !res.Truncated || !strings.HasSuffix(res.Text, "\n[truncated]") {
			t.Fatalf("MaxChars %d: not truncated: %q", maxChars, res.Text)
		}
		if res.Chars > maxChars || !utf8.ValidString(res.Text) {
			t.Fatalf("MaxChars %d: Chars %d, valid %v", maxChars, res.Chars, utf8.ValidString(res.Text))
		}
		kept := strings.TrimSuffix(res.Text, "\n[truncated]")
		if !strings.HasPrefix(body, kept) || utf8.RuneCountInString(kept) != maxChars-len("\n[truncated]") {
			t.Fatalf("MaxChars %d: kept %q", maxChars, kept)
		}
	}
	t.Run("Fits", func(t *testing.T) {
		res := mustExtract(t, []byte("中文"), "", Limits{MaxChars: 2})
		if res.Truncated || res.Text != "中文" {
			t.Fatalf("got %+v", res)
		}
	})
}

func TestExtractDOCX(t *testing.T) {
	res := mustExtract(t, sampleDOCX(t), "x.pdf", Limits{})
	want := "Hello\tworld again\nnext line\n姓名\t部门\n张三 (经理)\t研发\nbox\nkept"
	if res.Kind != DOCX || res.Text != want {
		t.Fatalf("Text = %q, want %q", res.Text, want)
	}
	t.Run("ErrEmpty", func(t *testing.T) {
		_, err := extract(t, docxOf(t, `<w:p><w:r><w:t>  </w:t></w:r></w:p>`), "", Limits{})
		wantErr(t, err, ErrEmpty)
	})
	t.Run("Truncated", func(t *testing.T) {
		res := mustExtract(t, docxOf(t, strings.Repeat(`<w:p><w:r><w:t>第一段落</w:t></w:r></w:p>`, 500)), "", Limits{MaxChars: 40})
		if !res.Truncated || res.Chars > 40 {
			t.Fatalf("got %+v", res)
		}
	})
}

func TestExtractXLSX(t *testing.T) {
	res := mustExtract(t, sampleXLSX(t), "", Limits{})
	want := "[sheet Items]\n名称\t数量\t\t备注\nRich text\t0.3\t2024-01-01\t12.5%\nTRUE\t2024-01-01 12:00:00\t1234.5\tformula\n\n" +
		"[sheet 空表]\n\n[sheet Last]\n7\t#DIV/0!"
	if res.Kind != XLSX || res.Text != want || res.Sheets != 3 {
		t.Fatalf("got %d sheets, Text = %q, want %q", res.Sheets, res.Text, want)
	}
	t.Run("ErrEmpty", func(t *testing.T) {
		_, err := extract(t, xlsxOf(t, [2]string{"A", ""}), "", Limits{})
		wantErr(t, err, ErrEmpty)
	})
}

func TestSerialDate(t *testing.T) {
	tests := []struct {
		serial float64
		b1904  bool
		want   string
	}{
		{1, false, "1900-01-01"},
		{59, false, "1900-02-28"},
		{60, false, "1900-02-29"},
		{61, false, "1900-03-01"},
		{45292.75, false, "2024-01-01 18:00:00"},
		{0.5, false, "12:00:00"},
		{0, true, "1904-01-01"},
	}
	for _, tt := range tests {
		if got, ok := serialDate(tt.serial, tt.b1904); !ok || got != tt.want {
			t.Errorf("serialDate(%v, %v) = %q, want %q", tt.serial, tt.b1904, got, tt.want)
		}
	}
}

func TestExtractExpiredContext(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for name, data := range map[string][]byte{"pdf": twoPagePDF(), "docx": sampleDOCX(t), "xlsx": sampleXLSX(t), "text": []byte("hello")} {
		_, err := Extract(ctx, data, "", Limits{})
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err = %v, want ErrTimeout", name, err)
		}
	}
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := Extract(canceled, sampleDOCX(t), "", Limits{}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: err = %v", err)
	}
}
