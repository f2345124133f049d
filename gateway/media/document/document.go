package document

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// Kind is a document type sniffed from the bytes (never from a file name).
type Kind string

// The kinds Extract understands.
const (
	PDF  Kind = "pdf"
	DOCX Kind = "docx"
	XLSX Kind = "xlsx"
	CSV  Kind = "csv"
	Text Kind = "text" // plain text / markdown
)

// Errors callers branch on. Every error Extract returns wraps exactly one
// of them (or context.Canceled), with detail after it.
var (
	ErrUnsupported = errors.New("document: unsupported type")
	ErrCorrupt     = errors.New("document: cannot be parsed")
	// ErrScanned is a PDF whose pages carry no extractable text: a scan,
	// or text in fonts that have no Unicode mapping.
	ErrScanned = errors.New("document: no extractable text (scanned?)")
	ErrBomb    = errors.New("document: over the size limits")
	// ErrTooComplex is an Office file whose XML spends the markup budget
	// (markup.go) before it yields any text: parsing it would cost far
	// more than its text is worth.
	ErrTooComplex = errors.New("document: too much markup for its text")
	ErrTimeout    = errors.New("document: parse time budget spent")
	ErrEmpty      = errors.New("document: no text")
	// ErrEncrypted is a PDF that needs a password to open.
	ErrEncrypted = errors.New("document: password-protected")
)

// Limits bound the work one Extract call may do. A zero field takes its
// default.
type Limits struct {
	// MaxChars is the output budget in characters (runes), the
	// "[truncated]" marker included; default 20000.
	MaxChars int
	// MaxUncompressed caps the bytes inflated from the file: for DOCX and
	// XLSX the zip entries (the sum of declared sizes, and what is read);
	// for PDF the decoded content streams and ToUnicode maps. Default 50 MB.
	MaxUncompressed int64
	// MaxEntries caps the zip entries of a DOCX or XLSX; default 2000.
	MaxEntries int
	// ParseTimeout is the wall-clock budget of one call, every kind;
	// default 10 s. The caller's ctx deadline applies too.
	ParseTimeout time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxChars        = 20000
	DefaultMaxUncompressed = 50 << 20
	DefaultMaxEntries      = 2000
	DefaultParseTimeout    = 10 * time.Second
)

func (l Limits) withDefaults() Limits {
	if l.MaxChars <= 0 {
		l.MaxChars = DefaultMaxChars
	}
	if l.MaxUncompressed <= 0 {
		l.MaxUncompressed = DefaultMaxUncompressed
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.ParseTimeout <= 0 {
		l.ParseTimeout = DefaultParseTimeout
	}
	return l
}

// Result is the text of a document, ready for a prompt.
type Result struct {
	Kind Kind
	// Text carries markers: "[page 3]" before each PDF page that has text,
	// "[sheet Name]" before each sheet; none for DOCX, CSV and text.
	Text      string
	Pages     int  // PDF pages (0 otherwise)
	Sheets    int  // XLSX sheets
	Chars     int  // runes in Text
	Truncated bool // Text was cut at MaxChars and ends with "[truncated]"
}

// input is what an extractor works on: the bytes and, for the text kinds,
// the text Sniff already decoded, for DOCX and XLSX the zip it opened (so
// each is decoded once).
type input struct {
	data   []byte
	text   string
	zip    *zip.Reader // nil when the directory did not read: zipErr says why
	zipErr error
}

type extractor func(ctx context.Context, in input, lim Limits) (Result, error)

// extractors is the dispatch table from a sniffed kind to its extractor.
var extractors = map[Kind]extractor{
	PDF:  extractPDF,
	DOCX: extractDOCX,
	XLSX: extractXLSX,
	CSV:  extractCSV,
	Text: extractPlain,
}

// Extract turns data into text within lim (zero fields take the defaults).
// name is only a tie-breaker between CSV and plain text.
//
// Errors: ErrUnsupported (not one of the kinds, binary, other zips),
// ErrCorrupt (cannot be parsed, including a panic inside a parser),
// ErrScanned (a PDF without extractable text), ErrBomb (zip caps, a lying
// declared size, a PDF whose structure or decoded content is over the
// caps), ErrTooComplex (a DOCX or XLSX whose markup spends its budget
// before any text), ErrTimeout (ParseTimeout or ctx's deadline; it also matches
// context.DeadlineExceeded), ErrEmpty (no text in a non-PDF), ErrEncrypted
// (a password-protected PDF), and context.Canceled.
func Extract(ctx context.Context, data []byte, name string, lim Limits) (res Result, err error) {
	lim = lim.withDefaults()
	kind, in, err := sniff(data, name, lim.MaxEntries)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, lim.ParseTimeout)
	defer cancel()
	defer func() {
		// The PDF parse recovers in its own goroutine; this catches the
		// rest (archive/zip, encoding/xml, encoding/csv, our own code).
		if p := recover(); p != nil {
			res, err = Result{Kind: kind}, fmt.Errorf("%w: %s: panic: %v", ErrCorrupt, kind, p)
		}
	}()
	res, err = extractors[kind](ctx, in, lim)
	if err != nil {
		return Result{Kind: kind}, err
	}
	res.Kind = kind
	return res, nil
}

// ctxErr turns a finished ctx into the error Extract returns.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("document: %w", err)
}

// Sniff returns the kind of data, or ErrUnsupported. name is only a
// tie-breaker between CSV and plain text (".csv"), never a reason to
// accept bytes.
func Sniff(data []byte, name string) (Kind, error) {
	k, _, err := sniff(data, name, DefaultMaxEntries)
	return k, err
}

// pdfSniffWindow is how far into the file "%PDF-" may start after
// whitespace (some producers and mail gateways prepend blank lines).
const pdfSniffWindow = 1024

// sniff is Sniff, also returning what it decoded to tell the kind (a
// zip over maxEntries is refused here, before its directory is read).
func sniff(data []byte, name string, maxEntries int) (Kind, input, error) {
	in := input{data: data}
	if pdfStart(data) >= 0 {
		return PDF, in, nil
	}
	if bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		in.zip, in.zipErr = openZip(data, maxEntries)
		if errors.Is(in.zipErr, ErrBomb) {
			return "", in, in.zipErr
		}
		k, err := sniffZip(data, in.zip)
		return k, in, err
	}
	text, err := decodeText(data)
	if err != nil {
		return "", in, err
	}
	in.text = text
	if strings.EqualFold(path.Ext(name), ".csv") {
		return CSV, in, nil
	}
	return Text, in, nil
}

// pdfStart is the offset of "%PDF-" after leading whitespace within the
// first pdfSniffWindow bytes, or -1.
func pdfStart(data []byte) int {
	for i := 0; i < len(data) && i < pdfSniffWindow; i++ {
		if bytes.HasPrefix(data[i:], []byte("%PDF-")) {
			return i
		}
		if !isSpace(data[i]) {
			return -1
		}
	}
	return -1
}

// sniffZip tells DOCX from XLSX by entry names: the central directory when
// it read (zr), else the local headers, so a truncated Office file is
// still recognised (and then reported as ErrCorrupt by Extract).
func sniffZip(data []byte, zr *zip.Reader) (Kind, error) {
	var names []string
	// A zip whose directory does not read is judged by the parts it
	// begins with: any word/ or xl/ part next to [Content_Types].xml.
	broken := zr == nil
	if broken {
		names = localZipNames(data)
	} else {
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
	}
	var types, word, workbook bool
	for _, n := range names {
		switch n = strings.ToLower(n); {
		case n == "[content_types].xml":
			types = true
		case n == "word/document.xml", broken && strings.HasPrefix(n, "word/"):
			word = true
		case n == "xl/workbook.xml", broken && strings.HasPrefix(n, "xl/"):
			workbook = true
		}
	}
	switch {
	case types && word:
		return DOCX, nil
	case types && workbook:
		return XLSX, nil
	}
	return "", fmt.Errorf("%w: a zip that is neither DOCX nor XLSX", ErrUnsupported)
}

// maxLocalNames bounds the local-header walk of a broken zip.
const maxLocalNames = 4096

// localZipNames reads entry names from local file headers ("PK\x03\x04",
// name length at +26, name at +30) wherever they occur.
func localZipNames(data []byte) []string {
	var names []string
	sig := []byte("PK\x03\x04")
	for off := 0; len(names) < maxLocalNames; {
		i := bytes.Index(data[off:], sig)
		if i < 0 {
			break
		}
		h := off + i
		off = h + len(sig)
		if h+30 > len(data) {
			break
		}
		n := int(binary.LittleEndian.Uint16(data[h+26:]))
		if h+30+n > len(data) {
			break
		}
		names = append(names, string(data[h+30:h+30+n]))
	}
	return names
}
