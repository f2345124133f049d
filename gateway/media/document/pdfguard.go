package document

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// The PDF library trusts numbers in the file when it allocates: the
// cross-reference /Size and subsection starts size its object table, /W
// sizes a buffer, a predictor's /Columns sizes two buffers, an object
// stream's /N counts a loop that runs without reading. A few bytes asking
// for terabytes would end the process (an out-of-memory error cannot be
// recovered), so checkStructure reads those numbers first, at the same
// offsets the library will, and refuses a file whose numbers are over caps
// derived from its size.

// Caps of checkStructure.
const (
	maxXrefHops       = 32      // /Prev links between cross-reference sections
	maxPredictColumns = 1 << 20 // a PNG predictor row; real images stay far below
	maxXrefWidth      = 8       // bytes of one /W field: a 64-bit offset
	maxScanTokens     = 4096    // tokens read after one name in the raw scan
	scanWindow        = 4096    // bytes read after one name in the raw scan: what is checked is short
)

var errStopped = errors.New("document: pdf parse stopped")

// objectCap bounds object numbers: an object takes more than 16 bytes of
// file in practice (an xref table entry alone is 20), and small files may
// still number their objects sparsely.
func objectCap(size int) int64 { return int64(size)/16 + 1<<16 }

// pdfView trims data to the PDF proper: from "%PDF-" to the last "%%EOF"
// within the final KB (mail gateways and uploaders append junk, which the
// library would take for a missing trailer).
func pdfView(data []byte) []byte {
	v := data[max(pdfStart(data), 0):]
	tail := max(0, len(v)-1024)
	if i := bytes.LastIndex(v[tail:], []byte("%%EOF")); i >= 0 {
		v = v[:tail+i+5]
	}
	return v
}

// pdfHeader replaces a file's own "%PDF-x.y" line for the library, which
// accepts only versions 1.0–1.7 followed directly by a newline; PDF 2.0
// and a header line with a trailing comment read the same.
var pdfHeader = []byte("%PDF-1.7\n")

// pdfFile is the io.ReaderAt the library reads the file through. Every
// read checks stop, so a parse that overran its budget ends at its next
// read: the library inflates streams only as it reads them, so at most
// one read's worth of inflation (a few MB) follows the stop.
type pdfFile struct {
	data    []byte
	stop    *atomic.Bool
	overlay bool // replace the header line with pdfHeader
}

func newPDFFile(v []byte, stop *atomic.Bool) *pdfFile {
	ok := len(v) > 8 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' && v[7] >= '0' && v[7] <= '9'
	return &pdfFile{data: v, stop: stop, overlay: ok}
}

func (f *pdfFile) ReadAt(p []byte, off int64) (int, error) {
	if f.stop.Load() {
		return 0, errStopped
	}
	if off < 0 {
		return 0, fmt.Errorf("pdf: negative offset %d", off)
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if f.overlay {
		for i := off; i < int64(len(pdfHeader)) && i < off+int64(n); i++ {
			p[i-off] = pdfHeader[i]
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// checkStructure refuses a PDF whose numbers would make the library
// allocate without bound (ErrBomb) or whose trailer it could not find
// (ErrCorrupt).
func checkStructure(v []byte) error {
	objCap := objectCap(len(v))
	if err := checkXrefChain(v, objCap); err != nil {
		return err
	}
	return checkNames(v, objCap)
}

func corruptf(format string, a ...any) error {
	return fmt.Errorf("%w: pdf: "+format, append([]any{ErrCorrupt}, a...)...)
}

func bombf(format string, a ...any) error {
	return fmt.Errorf("%w: pdf: "+format, append([]any{ErrBomb}, a...)...)
}

// checkXrefChain follows startxref and the /Prev links exactly as the
// library does and checks every cross-reference section on the way.
func checkXrefChain(v []byte, objCap int64) error {
	// The library looks for "startxref" on its own line in the last 100
	// bytes.
	tail := v[max(0, len(v)-100):]
	i := lastLine(tail, []byte("startxref"))
	if i < 0 {
		return corruptf("no startxref")
	}
	l := newLexer(bytes.NewReader(tail[i+len("startxref"):]), 64)
	t := l.next()
	if t.kind != tokInt {
		return corruptf("startxref without an offset")
	}
	seen := map[int64]bool{}
	tab := &objTable{objCap: objCap}
	for off := t.i; off >= 0; {
		if len(seen) >= maxXrefHops || seen[off] {
			return corruptf("cross-reference sections loop or chain past %d", maxXrefHops)
		}
		seen[off] = true
		if off >= int64(len(v)) {
			return corruptf("cross-reference offset %d past the end", off)
		}
		br := bytes.NewReader(v[off:])
		l = newLexer(br, 1<<10)
		var err error
		switch t := l.next(); {
		case t.is("xref"):
			off, err = checkXrefTable(l, objCap)
		case t.kind == tokInt:
			var d map[string]any
			start := off
			if off, d, err = checkXrefStream(l, objCap); err == nil {
				// The lexer stopped after the dictionary: the stream's
				// data follows "stream" and its end of line.
				err = tab.addSection(v, start+br.Size()-int64(br.Len()), l, d)
			}
		default:
			return corruptf("no cross-reference section at %d", off)
		}
		if err != nil {
			return err
		}
	}
	return tab.check(v)
}

// lastLine is the index of the last s in buf that stands on its own line.
func lastLine(buf, s []byte) int {
	for end := len(buf); ; {
		i := bytes.LastIndex(buf[:end], s)
		if i <= 0 || i+len(s) >= len(buf) {
			return -1
		}
		if eol(buf[i-1]) && eol(buf[i+len(s)]) {
			return i
		}
		end = i
	}
}

func eol(c byte) bool { return c == '\n' || c == '\r' }

// checkXrefTable checks a classic "xref" table's subsections and trailer,
// and returns the trailer's /Prev (or -1).
func checkXrefTable(l *lexer, objCap int64) (int64, error) {
	for {
		t := l.next()
		if t.is("trailer") {
			break
		}
		n := l.next()
		if t.kind != tokInt || n.kind != tokInt {
			return 0, corruptf("malformed xref subsection")
		}
		if t.i < 0 || n.i < 0 || t.i+n.i > objCap {
			return 0, bombf("xref subsection %d+%d over %d objects", t.i, n.i, objCap)
		}
		for range n.i * 3 {
			if l.next().kind == tokEOF {
				return 0, corruptf("xref table cut short")
			}
		}
	}
	if l.next().kind != tokDictOpen {
		return 0, corruptf("xref trailer is not a dictionary")
	}
	d := parseDict(l, 0)
	if err := checkSize(d, objCap); err != nil {
		return 0, err
	}
	return prevOf(d), nil
}

// checkXrefStream checks a cross-reference stream's dictionary after its
// object number, and returns its /Prev (or -1) and the dictionary.
func checkXrefStream(l *lexer, objCap int64) (int64, map[string]any, error) {
	if l.next().kind != tokInt || !l.next().is("obj") || l.next().kind != tokDictOpen {
		return 0, nil, corruptf("no cross-reference stream")
	}
	d := parseDict(l, 0)
	if err := checkSize(d, objCap); err != nil {
		return 0, nil, err
	}
	if w, ok := d["W"].([]any); ok {
		for _, x := range w {
			if n, ok := x.(int64); !ok || n < 0 || n > maxXrefWidth {
				return 0, nil, bombf("xref stream /W %v", w)
			}
		}
	}
	if idx, ok := d["Index"].([]any); ok {
		for i := 0; i+1 < len(idx); i += 2 {
			start, ok1 := idx[i].(int64)
			n, ok2 := idx[i+1].(int64)
			if ok1 && ok2 && (start < 0 || n < 0 || start+n > objCap) {
				return 0, nil, bombf("xref stream /Index %d+%d over %d objects", start, n, objCap)
			}
		}
	}
	return prevOf(d), d, nil
}

func checkSize(d map[string]any, objCap int64) error {
	if n, ok := d["Size"].(int64); ok && (n < 0 || n > objCap) {
		return bombf("/Size %d over %d objects", n, objCap)
	}
	return nil
}

func prevOf(d map[string]any) int64 {
	if p, ok := d["Prev"].(int64); ok && p >= 0 {
		return p
	}
	return -1
}

// pdfRef is an indirect reference "id gen R".
type pdfRef struct{ id, gen int64 }

// maxDictDepth bounds nesting in the dictionaries checkStructure parses.
const maxDictDepth = 32

// parseDict reads a dictionary after its "<<" into names and values
// (int64, float64, string, []any, map[string]any, pdfRef, keywords as
// string), as far as it is well formed.
func parseDict(l *lexer, depth int) map[string]any {
	elems, _ := parseSeq(l, tokDictClose, depth)
	d := make(map[string]any, len(elems)/2)
	for i := 0; i+1 < len(elems); i += 2 {
		if k, ok := elems[i].(pdfName); ok {
			d[string(k)] = elems[i+1]
		}
	}
	return d
}

type pdfName string

// parseSeq reads values up to the closing token, folding "id gen R" into
// a pdfRef, and reports whether it found the closing token.
func parseSeq(l *lexer, end tokKind, depth int) ([]any, bool) {
	var out []any
	for range maxScanTokens {
		t := l.next()
		if t.kind == end {
			return out, true
		}
		if t.kind == tokEOF {
			break
		}
		var v any
		switch t.kind {
		case tokInt:
			v = t.i
		case tokReal:
			v = t.f
		case tokName:
			v = pdfName(t.b)
		case tokString:
			v = string(t.b)
		case tokArrayOpen, tokDictOpen:
			if depth >= maxDictDepth {
				return out, false
			}
			if t.kind == tokArrayOpen {
				v, _ = parseSeq(l, tokArrayClose, depth+1)
			} else {
				v = parseDict(l, depth+1)
			}
		case tokKeyword:
			if t.is("R") && len(out) >= 2 {
				id, ok1 := out[len(out)-2].(int64)
				gen, ok2 := out[len(out)-1].(int64)
				if ok1 && ok2 {
					out = append(out[:len(out)-2], pdfRef{id, gen})
					continue
				}
			}
			v = string(t.b)
		default:
			continue // a stray closing token
		}
		out = append(out, v)
	}
	return out, false
}

// checkNames scans every name in the file, wherever it is (the library
// may read an object at any offset, so a scan that followed the syntax
// could be steered around one), and checks the values after the names that
// size allocations or loops in the library:
//   - /Columns: a direct integer up to maxPredictColumns;
//   - /N: a direct integer up to objCap (an object stream's count);
//   - /DecodeParms: direct, so the /Columns inside it is visible here (an
//     indirect one could sit inside a compressed object stream).
func checkNames(v []byte, objCap int64) error {
	br := bytes.NewReader(nil)
	l := newLexer(br, 64)
	// Names followed by long strings or comments that hold more names
	// would make the scan quadratic: the bytes read after names are
	// counted, and a file that needs far more than a pass is refused.
	var read, budget int64 = 0, 8*int64(len(v)) + 1<<20
	for off := 0; off < len(v); {
		i := bytes.IndexByte(v[off:], '/')
		if i < 0 {
			break
		}
		off += i + 1
		if off >= len(v) {
			break
		}
		if c := v[off]; c != 'C' && c != 'N' && c != 'D' && c != '#' {
			continue
		}
		br.Reset(v[off:min(off+scanWindow, len(v))])
		var err error
		switch string(l.name().b) {
		case "Columns":
			err = checkDirectInt(l, "/Columns", maxPredictColumns)
		case "N":
			err = checkDirectInt(l, "/N", objCap)
		case "DecodeParms":
			err = checkDecodeParms(l)
		}
		if err != nil {
			return err
		}
		if read += br.Size() - int64(br.Len()); read > budget {
			return bombf("names too dense to check")
		}
	}
	return nil
}

// checkDirectInt checks the value after a name: no reference, no integer
// over limit. Other values (reals, names) are the library's business.
func checkDirectInt(l *lexer, key string, limit int64) error {
	t := l.next()
	if t.kind != tokInt {
		return nil
	}
	if t.i < 0 || t.i > limit {
		return bombf("%s %d over %d", key, t.i, limit)
	}
	if l.next().kind == tokInt && l.next().is("R") {
		return bombf("%s is an indirect reference", key)
	}
	return nil
}

func checkDecodeParms(l *lexer) error {
	t := l.next()
	switch t.kind {
	case tokInt:
		if l.next().kind == tokInt && l.next().is("R") {
			return bombf("/DecodeParms is an indirect reference")
		}
	case tokArrayOpen:
		elems, closed := parseSeq(l, tokArrayClose, 0)
		if !closed {
			return bombf("/DecodeParms array longer than %d bytes", scanWindow)
		}
		for _, x := range elems {
			if _, ok := x.(pdfRef); ok {
				return bombf("/DecodeParms holds an indirect reference")
			}
		}
	}
	return nil
}
