package document

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"io"
)

// The library resolves an object inside an object stream by first
// resolving the stream, and reads the stream's own /Type, /N, /First,
// /Length, /Filter and /Extends the same way, recursively and without a
// depth limit. An object stream listed as living in another object stream
// (or one whose dictionary refers to such an object) makes that recursion
// endless; Go ends it with a fatal stack overflow, which takes the whole
// process down and cannot be recovered. So before the library sees a file
// with cross-reference streams, objTable decodes those streams as the
// library will and refuses such a file.

// objTable is the merged cross-reference of a file's xref streams, as the
// library builds it: the newest section first, the first entry for an
// object winning. Each entry is 0 (none), xrefFree, offset+xrefOffset for
// a plain object, or -(stream+1) for an object inside an object stream.
type objTable struct {
	objCap  int64
	entries []int64
	marked  []bool // set entries, including free ones
}

const (
	xrefFree   = 1
	xrefOffset = 2
)

// addSection reads one cross-reference stream: d is its dictionary and at
// is where the lexer stopped after it.
func (t *objTable) addSection(v []byte, at int64, l *lexer, d map[string]any) error {
	if !l.next().is("stream") {
		return corruptf("cross-reference stream without data")
	}
	// at was taken before "stream" was read: find the data after it.
	p := at
	for p < int64(len(v)) && isSpace(v[p]) {
		p++
	}
	p += int64(len("stream"))
	if p < int64(len(v)) && v[p] == '\r' {
		p++
	}
	if p < int64(len(v)) && v[p] == '\n' {
		p++
	}
	length, ok := d["Length"].(int64)
	if !ok || length <= 0 || p >= int64(len(v)) {
		return nil // the library reads no entries either
	}
	raw := v[p:min(p+length, int64(len(v)))]
	rd, err := xrefFilters(raw, d)
	if err != nil {
		return err
	}
	var w []int
	ww, _ := d["W"].([]any)
	total := 0
	for _, x := range ww {
		n, _ := x.(int64)
		w = append(w, int(n))
		total += int(n)
	}
	if len(w) < 3 {
		return corruptf("xref stream /W %v", ww)
	}
	index, _ := d["Index"].([]any)
	if index == nil {
		size, _ := d["Size"].(int64)
		index = []any{int64(0), size}
	}
	buf := make([]byte, total)
	br := bufio.NewReader(rd)
	for i := 0; i+1 < len(index); i += 2 {
		start, _ := index[i].(int64)
		n, _ := index[i+1].(int64)
		for k := range n {
			if _, err := io.ReadFull(br, buf); err != nil {
				return corruptf("xref stream data: %v", err)
			}
			typ := int64(1)
			if w[0] > 0 {
				typ = beInt(buf[:w[0]])
			}
			t.set(start+k, typ, beInt(buf[w[0]:w[0]+w[1]]))
		}
	}
	return nil
}

func beInt(b []byte) int64 {
	var x int64
	for _, c := range b {
		x = x<<8 | int64(c)
	}
	return x
}

func (t *objTable) set(id, typ, f2 int64) {
	if id < 0 || id > t.objCap {
		return
	}
	for int64(len(t.entries)) <= id {
		t.entries = append(t.entries, 0)
		t.marked = append(t.marked, false)
	}
	if t.marked[id] {
		return
	}
	switch typ {
	case 0:
		t.entries[id] = xrefFree
	case 1:
		t.entries[id] = f2 + xrefOffset
	case 2:
		t.entries[id] = -(f2 + 1)
	default:
		return // the library leaves such an entry unset
	}
	t.marked[id] = true
}

func (t *objTable) inStream(id int64) bool {
	return id >= 0 && id < int64(len(t.entries)) && t.entries[id] < 0
}

// check refuses an object stream that is itself inside an object stream,
// and an object stream's dictionary that refers to an object inside one;
// /Extends links are followed the same way.
func (t *objTable) check(v []byte) error {
	var work []int64
	queued := map[int64]bool{}
	for _, e := range t.entries {
		if s := -e - 1; e < 0 && !queued[s] {
			queued[s] = true
			work = append(work, s)
		}
	}
	for len(work) > 0 {
		s := work[len(work)-1]
		work = work[:len(work)-1]
		if t.inStream(s) {
			return corruptf("object stream %d is inside an object stream", s)
		}
		if s < 0 || s >= int64(len(t.entries)) || t.entries[s] < xrefOffset {
			continue // missing: the library fails on it without recursing
		}
		off := t.entries[s] - xrefOffset
		if off >= int64(len(v)) {
			continue
		}
		l := newLexer(bytes.NewReader(v[off:]), 64)
		if l.next().kind != tokInt || l.next().kind != tokInt || !l.next().is("obj") || l.next().kind != tokDictOpen {
			continue
		}
		d := parseDict(l, 0)
		var bad error
		walkRefs(d, 0, func(r pdfRef) {
			if bad == nil && t.inStream(r.id) {
				bad = corruptf("object stream %d refers to object %d inside an object stream", s, r.id)
			}
		})
		if bad != nil {
			return bad
		}
		if ext, ok := d["Extends"].(pdfRef); ok && !queued[ext.id] {
			queued[ext.id] = true
			work = append(work, ext.id)
		}
	}
	return nil
}

func walkRefs(x any, depth int, f func(pdfRef)) {
	if depth > maxDictDepth {
		return
	}
	switch x := x.(type) {
	case pdfRef:
		f(x)
	case []any:
		for _, e := range x {
			walkRefs(e, depth+1, f)
		}
	case map[string]any:
		for _, e := range x {
			walkRefs(e, depth+1, f)
		}
	}
}

// xrefFilters decodes a cross-reference stream as the library does: no
// filter or FlateDecode, with no predictor or PNG Up (12). Anything else
// the library would refuse as well.
func xrefFilters(raw []byte, d map[string]any) (io.Reader, error) {
	var rd io.Reader = bytes.NewReader(raw)
	filter, parms := d["Filter"], d["DecodeParms"]
	if a, ok := filter.([]any); ok && len(a) == 1 {
		filter = a[0]
		if p, ok := parms.([]any); ok && len(p) == 1 {
			parms = p[0]
		}
	}
	switch filter {
	case nil:
		return rd, nil
	case pdfName("FlateDecode"):
	default:
		return nil, corruptf("xref stream filter %v", filter)
	}
	zr, err := zlib.NewReader(rd)
	if err != nil {
		return nil, corruptf("xref stream: %v", err)
	}
	p, _ := parms.(map[string]any)
	switch pred, _ := p["Predictor"].(int64); pred {
	case 0, 1:
		return zr, nil
	case 12:
		cols, _ := p["Columns"].(int64)
		if cols < 0 || cols > maxPredictColumns {
			return nil, bombf("xref stream /Columns %d", cols)
		}
		return &pngUp{r: zr, row: make([]byte, 1+cols), prev: make([]byte, 1+cols)}, nil
	}
	return nil, corruptf("xref stream predictor %v", p["Predictor"])
}

// pngUp undoes the PNG Up predictor: each row (a type byte, 2, then
// Columns bytes) adds to the row above.
type pngUp struct {
	r         io.Reader
	row, prev []byte
	pend      []byte
}

func (p *pngUp) Read(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		if len(p.pend) == 0 {
			if _, err := io.ReadFull(p.r, p.row); err != nil {
				return n, err
			}
			if p.row[0] != 2 {
				return n, corruptf("xref stream: PNG predictor %d", p.row[0])
			}
			for i := range p.row {
				p.prev[i] += p.row[i]
			}
			p.pend = p.prev[1:]
		}
		m := copy(b, p.pend)
		p.pend, b, n = p.pend[m:], b[m:], n+m
	}
	return n, nil
}
