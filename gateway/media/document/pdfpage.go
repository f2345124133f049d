package document

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
)

// The state of one PDF's extraction across pages: the budgets, the
// readers of decoded streams, the fonts, and where the last text ended.

var errBudget = errors.New("document: pdf decoded content over budget")

// pdfText is the state of one document's extraction.
type pdfText struct {
	ctx       context.Context
	stop      *atomic.Bool
	s         *sink
	budget    int64 // decoded bytes left
	budgetOut bool
	fonts     map[string]*fontDec // by the font dictionary's text
	byRef     map[string]*fontDec // by the /Font dictionary's text and a name
	pageErrs  int
	firstErr  error

	// The page being read.
	pageNo int
	marked bool    // its "[page N]" is written
	sep    byte    // separator owed before the next text: ' ' or '\n'
	gapEm  float64 // the horizontal gap behind sep, in text size units
	pos    textPos
	forms  int

	scratch []byte        // decoded text of one string operand
	top     *interp       // reused for each page
	br      *bufio.Reader // reused for page content streams
}

// textPos is where the last text shown ended, in device space.
type textPos struct {
	has        bool
	x, y, endX float64
	size       float64
}

func newPDFText(ctx context.Context, stop *atomic.Bool, s *sink, budget int64) *pdfText {
	return &pdfText{ctx: ctx, stop: stop, s: s, budget: budget, fonts: map[string]*fontDec{}, byRef: map[string]*fontDec{}}
}

func (x *pdfText) stopped() bool { return x.stop.Load() || x.ctx.Err() != nil }

// done reports that no more pages should be read.
func (x *pdfText) done() bool { return x.s.full || x.budgetOut || x.stopped() }

// abort is the error that ends the parse whatever was read: the budget.
func (x *pdfText) abort() error {
	if x.stopped() {
		return ctxErr(x.ctx)
	}
	if x.budgetOut && x.s.text > 0 {
		x.s.cut()
	}
	return nil
}

// classify turns err into the timeout it really is when the parse was
// stopped (the library then fails on its reads).
func (x *pdfText) classify(err error) error {
	if x.stopped() {
		return ctxErr(x.ctx)
	}
	return err
}

// page reads one page; a page that fails is counted and skipped, so one
// broken page does not cost the others.
func (x *pdfText) page(n int, node, res pdf.Value) {
	x.pageNo, x.marked, x.sep, x.pos, x.forms = n, false, 0, textPos{}, 0
	var err error
	if perr := guard(func() {
		in := newInterp(x, res, ident, 0)
		err = in.exec(x.contents(node.Key("Contents")))
	}); perr != nil {
		err = perr
	}
	if err == nil || x.stopped() || errors.Is(err, errBudget) {
		return
	}
	x.pageErrs++
	if x.firstErr == nil {
		x.firstErr = fmt.Errorf("page %d: %w", n, err)
	}
}

// contents returns a reader of a page's /Contents: one stream, or an
// array of streams read one after another with a newline between (a
// token never spans two of them).
func (x *pdfText) contents(v pdf.Value) io.Reader {
	switch v.Kind() {
	case pdf.Stream:
		return x.decoded(v)
	case pdf.Array:
		return &partsReader{x: x, parts: v, n: min(v.Len(), maxContentParts)}
	}
	return strings.NewReader("")
}

type partsReader struct {
	x     *pdfText
	parts pdf.Value
	i, n  int
	cur   io.Reader
}

func (p *partsReader) Read(b []byte) (int, error) {
	for {
		if p.cur == nil {
			if p.i >= p.n {
				return 0, io.EOF
			}
			part := p.parts.Index(p.i)
			p.i++
			if part.Kind() != pdf.Stream {
				continue
			}
			p.cur = io.MultiReader(p.x.decoded(part), strings.NewReader("\n"))
		}
		n, err := p.cur.Read(b)
		if errors.Is(err, io.EOF) {
			p.cur, err = nil, nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// decoded returns stream v's decoded bytes, counted against the budget.
func (x *pdfText) decoded(v pdf.Value) io.Reader {
	return &budgetReader{x: x, r: v.Reader()}
}

type budgetReader struct {
	x *pdfText
	r io.Reader
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.x.stop.Load() {
		return 0, errStopped
	}
	n, err := b.r.Read(p)
	b.x.budget -= int64(n)
	if b.x.budget < 0 {
		b.x.budgetOut = true
		return 0, errBudget
	}
	return n, err
}

// place decides what separates the text about to be shown at (px, py)
// from the text before it: a newline when the baseline moved by more than
// half the text size, a space when the pen jumped ahead on the same line.
func (x *pdfText) place(px, py, size float64) {
	p := &x.pos
	if p.has {
		h := max(size, p.size, 1e-9)
		switch dy := math.Abs(py - p.y); {
		case dy > 0.5*h:
			x.sep = '\n'
		case px-p.endX > 0.2*h:
			if x.sep == 0 {
				x.sep, x.gapEm = ' ', (px-p.endX)/h
			}
		case px < p.x-0.5*h:
			if x.sep == 0 {
				x.sep, x.gapEm = ' ', 2
			}
		}
	}
	p.has, p.x, p.y, p.size = true, px, py, size
}

// emit writes text shown on the current page, after its "[page N]" marker
// and whatever separator place decided.
func (x *pdfText) emit(text []byte) {
	if len(bytes.TrimSpace(text)) == 0 {
		if len(text) > 0 && x.sep == 0 {
			x.sep, x.gapEm = ' ', 1
		}
		return
	}
	if !x.marked {
		if !x.s.section(fmt.Sprintf("[page %d]", x.pageNo)) {
			return
		}
		x.marked, x.sep = true, 0
	}
	switch x.sep {
	case '\n':
		x.s.newline()
	case ' ':
		// Chinese and Japanese text is set without spaces; justified
		// lines spread the glyphs, which is not a word break.
		first, _ := utf8.DecodeRune(text)
		if !(isCJK(x.s.last) && isCJK(first) && x.gapEm < 1) {
			x.s.space()
		}
	}
	x.sep = 0
	x.s.writeBytes(text)
}

func isCJK(r rune) bool {
	return r >= 0x2E80 && r <= 0x9FFF || r >= 0xF900 && r <= 0xFAFF || r >= 0xFF00 && r <= 0xFFEF || r >= 0x20000 && r <= 0x3FFFF
}

func (x *pdfText) fontFor(fv pdf.Value) *fontDec {
	if fv.Kind() != pdf.Dict {
		return nil
	}
	key := fv.String()
	if len(key) > maxFontKey {
		return x.newFont(fv)
	}
	if f, ok := x.fonts[key]; ok {
		return f
	}
	f := x.newFont(fv)
	if len(x.fonts) < maxFonts {
		x.fonts[key] = f
	}
	return f
}
