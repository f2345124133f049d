package document

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/unicode"
)

// maxControlPermille is the share of control characters (other than tab,
// newline, carriage return, form feed) above which bytes are treated as
// binary even though they decode: real text has next to none.
const maxControlPermille = 10

// decodeText returns data as UTF-8 text, or ErrUnsupported for binary. It
// accepts UTF-8 (with or without a BOM), UTF-16 with a BOM (Windows
// "Unicode" text and Excel's "Unicode Text" export), and GB18030/GBK, which
// Chinese Windows still writes for .txt and .csv files.
func decodeText(data []byte) (string, error) {
	var text string
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		dec := unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder()
		b, err := dec.Bytes(data)
		if err != nil || bytes.Contains(b, []byte("\uFFFD")) {
			return "", fmt.Errorf("%w: invalid UTF-16 text", ErrUnsupported)
		}
		text = string(b)
	case bytes.IndexByte(data, 0) >= 0:
		return "", fmt.Errorf("%w: binary data (NUL bytes)", ErrUnsupported)
	case utf8.Valid(data):
		text = string(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")))
	default:
		b, err := simplifiedchinese.GB18030.NewDecoder().Bytes(data)
		if err != nil || bytes.Contains(b, []byte("\uFFFD")) {
			return "", fmt.Errorf("%w: neither UTF-8 nor GB18030 text", ErrUnsupported)
		}
		text = string(b)
	}
	var runes, controls int
	for _, r := range text {
		runes++
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f') || r == 0x7f {
			controls++
		}
	}
	if controls > 0 && controls*1000 > runes*maxControlPermille {
		return "", fmt.Errorf("%w: binary data (control characters)", ErrUnsupported)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return "", fmt.Errorf("%w: binary data (NUL characters)", ErrUnsupported)
	}
	return text, nil
}

// textChunk is how much plain text is written between ctx checks.
const textChunk = 64 << 10

func extractPlain(ctx context.Context, in input, lim Limits) (Result, error) {
	s := newSink(lim.MaxChars)
	text := in.text
	for len(text) > 0 {
		if err := ctx.Err(); err != nil {
			return Result{}, ctxErr(ctx)
		}
		n := min(len(text), textChunk)
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++
		}
		if !s.write(text[:n]) {
			break
		}
		text = text[n:]
	}
	return finishText(s)
}

// finishText is the end of every non-PDF extractor.
func finishText(s *sink) (Result, error) {
	if s.text == 0 {
		return Result{}, ErrEmpty
	}
	return s.result(), nil
}

// csvCheckEvery is how many rows are written between ctx checks.
const csvCheckEvery = 1024

// cellEscaper keeps a cell on its line: tabs and newlines inside it would
// otherwise read as new columns and rows.
var cellEscaper = strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ", "\r", " ")

func extractCSV(ctx context.Context, in input, lim Limits) (Result, error) {
	r := csv.NewReader(strings.NewReader(in.text))
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	s := newSink(lim.MaxChars)
	var line strings.Builder
	for row := 0; ; row++ {
		if row%csvCheckEvery == 0 && ctx.Err() != nil {
			return Result{}, ctxErr(ctx)
		}
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Result{}, fmt.Errorf("%w: csv: %w", ErrCorrupt, err)
		}
		line.Reset()
		writeRow(&line, rec)
		if !s.write(line.String()) {
			break
		}
	}
	return finishText(s)
}

// writeRow writes cells as one tab-separated line, without trailing empty
// cells.
func writeRow(b *strings.Builder, cells []string) {
	n := len(cells)
	for n > 0 && strings.TrimSpace(cells[n-1]) == "" {
		n--
	}
	for i, c := range cells[:n] {
		if i > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(cellEscaper.Replace(c))
	}
	b.WriteByte('\n')
}
