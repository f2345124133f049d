package document

import (
	"bufio"
	"io"
	"math"

	"github.com/ledongthuc/pdf"
)

// The content-stream interpreter is ours, not the library's
// Page.GetPlainText: that one collects a page's whole text before
// returning it, grows its operand stack without bound, cannot be stopped
// mid-page, and maps ToUnicode codes by a linear search per glyph. Here the
// library still parses the file, resolves objects and decodes streams;
// we read the decoded bytes as they come and keep only bounded state.

// Caps of the interpreter.
const (
	maxOperands     = 64   // operands kept before an operator
	maxArrayItems   = 4096 // elements kept of a TJ array
	maxStringToken  = 64 << 10
	maxSavedStates  = 64   // q nesting
	maxFormDepth    = 4    // form XObjects inside form XObjects
	maxFormsPerPage = 512  // form XObjects run on one page
	maxContentParts = 4096 // streams in one page's /Contents array
	maxFonts        = 256  // decoded fonts cached per document
	maxFontKey      = 64 << 10
	checkEvery      = 1 << 10 // tokens between stop checks
)

// mat is a PDF matrix [a b c d e f].
type mat [6]float64

var ident = mat{1, 0, 0, 1, 0, 0}

// mul is m × n.
func (m mat) mul(n mat) mat {
	return mat{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func translate(tx, ty float64) mat { return mat{1, 0, 0, 1, tx, ty} }

type operand struct {
	kind tokKind // tokReal (numbers), tokString, tokName, tokArrayOpen, tokDictOpen
	f    float64
	b    []byte // tokString: in the interpreter's arena
	s    string // tokName
}

// gstate is the part of the graphics state that q and Q save.
type gstate struct {
	ctm            mat
	font           *fontDec
	size, leading  float64
	hscale, tc, tw float64
}

// interp runs one content stream: a page's, or a form XObject's.
type interp struct {
	x     *pdfText
	res   pdf.Value
	depth int
	gstate
	saved    []gstate
	tm, tlm  mat
	ops      []operand
	arr      []operand // the last array operand's elements
	arena    []byte    // the string operands since the last operator
	byName   map[string]*fontDec
	fontsKey string // the text of the resources' /Font dictionary
}

func newInterp(x *pdfText, res pdf.Value, ctm mat, depth int) *interp {
	var in *interp
	switch {
	case depth > 0:
		in = &interp{}
	case x.top == nil:
		x.top = &interp{}
		in = x.top
	default:
		in = x.top // a page's interpreter reuses the last page's buffers
	}
	*in = interp{x: x, res: res, depth: depth, gstate: gstate{ctm: ctm, hscale: 1}, tm: ident, tlm: ident,
		saved: in.saved[:0], ops: in.ops[:0], arr: in.arr[:0], arena: in.arena[:0]}
	return in
}

func (in *interp) exec(rd io.Reader) error {
	var br *bufio.Reader
	if in.depth == 0 && in.x.br != nil {
		br = in.x.br
		br.Reset(rd)
	} else {
		br = bufio.NewReaderSize(rd, 16<<10)
		if in.depth == 0 {
			in.x.br = br
		}
	}
	l := newLexer(br, maxStringToken)
	arrDepth, dictDepth := 0, 0
	for n := 0; ; n++ {
		if n%checkEvery == 0 && in.x.done() {
			return nil
		}
		t := l.next()
		switch t.kind {
		case tokEOF:
			return l.err
		case tokDictOpen:
			dictDepth++
			continue
		case tokDictClose:
			if dictDepth > 0 {
				if dictDepth--; dictDepth == 0 && arrDepth == 0 {
					in.push(operand{kind: tokDictOpen})
				}
			}
			continue
		}
		if dictDepth > 0 {
			continue // marked-content properties: nothing to show
		}
		switch t.kind {
		case tokArrayOpen:
			if arrDepth++; arrDepth == 1 {
				in.arr = in.arr[:0]
			}
		case tokArrayClose:
			if arrDepth > 0 {
				if arrDepth--; arrDepth == 0 {
					in.push(operand{kind: tokArrayOpen})
				}
			}
		case tokInt, tokReal:
			in.add(operand{kind: tokReal, f: t.f}, arrDepth)
		case tokString:
			in.add(operand{kind: tokString, b: in.keep(t.b)}, arrDepth)
		case tokName:
			in.add(operand{kind: tokName, s: string(t.b)}, arrDepth)
		case tokKeyword:
			if arrDepth > 0 {
				continue
			}
			if t.is("BI") {
				skipToID(l)
			} else if err := in.do(string(t.b)); err != nil {
				return err
			}
			in.ops, in.arena = in.ops[:0], in.arena[:0]
		}
	}
}

// maxArena bounds the string bytes kept between two operators.
const maxArena = 1 << 20

// keep copies a string token into the arena, which is reused after each
// operator, so string operands cost no allocation.
func (in *interp) keep(b []byte) []byte {
	if len(in.arena)+len(b) > maxArena {
		return nil
	}
	start := len(in.arena)
	in.arena = append(in.arena, b...)
	return in.arena[start:len(in.arena):len(in.arena)]
}

// skipToID skips an inline image: its parameters up to ID, then its data.
func skipToID(l *lexer) {
	for range maxScanTokens {
		t := l.next()
		if t.kind == tokEOF {
			return
		}
		if t.is("ID") {
			l.skipInlineImage()
			return
		}
	}
}

func (in *interp) add(o operand, arrDepth int) {
	switch {
	case arrDepth == 0:
		in.push(o)
	case arrDepth == 1 && len(in.arr) < maxArrayItems:
		in.arr = append(in.arr, o)
	}
}

func (in *interp) push(o operand) {
	if len(in.ops) >= maxOperands {
		copy(in.ops, in.ops[1:])
		in.ops = in.ops[:len(in.ops)-1]
	}
	in.ops = append(in.ops, o)
}

// num is the number k places from the end of the operands (-1 the last).
func (in *interp) num(k int) float64 {
	if i := len(in.ops) + k; i >= 0 && i < len(in.ops) && in.ops[i].kind == tokReal {
		return in.ops[i].f
	}
	return 0
}

func (in *interp) last(kind tokKind) (operand, bool) {
	if n := len(in.ops); n > 0 && in.ops[n-1].kind == kind {
		return in.ops[n-1], true
	}
	return operand{}, false
}

func (in *interp) matrix() (mat, bool) {
	if len(in.ops) < 6 {
		return mat{}, false
	}
	var m mat
	for i := range m {
		m[i] = in.num(i - 6)
	}
	return m, true
}

// do runs one operator; only those that move text or show it matter.
func (in *interp) do(op string) error {
	switch op {
	case "q":
		if len(in.saved) < maxSavedStates {
			in.saved = append(in.saved, in.gstate)
		}
	case "Q":
		if n := len(in.saved); n > 0 {
			in.gstate, in.saved = in.saved[n-1], in.saved[:n-1]
		}
	case "cm":
		if m, ok := in.matrix(); ok {
			in.ctm = m.mul(in.ctm)
		}
	case "BT":
		in.tm, in.tlm = ident, ident
	case "Tf":
		if n := len(in.ops); n >= 2 && in.ops[n-2].kind == tokName {
			in.font, in.size = in.fontNamed(in.ops[n-2].s), in.num(-1)
		}
	case "TL":
		in.leading = in.num(-1)
	case "Tz":
		in.hscale = in.num(-1) / 100
	case "Tc":
		in.tc = in.num(-1)
	case "Tw":
		in.tw = in.num(-1)
	case "Td":
		in.move(in.num(-2), in.num(-1))
	case "TD":
		in.leading = -in.num(-1)
		in.move(in.num(-2), in.num(-1))
	case "Tm":
		if m, ok := in.matrix(); ok {
			in.tm, in.tlm = m, m
		}
	case "T*":
		in.move(0, -in.leading)
	case "Tj", "'", "\"":
		if op != "Tj" {
			in.move(0, -in.leading)
		}
		if op == "\"" && len(in.ops) >= 3 {
			in.tw, in.tc = in.num(-3), in.num(-2)
		}
		if s, ok := in.last(tokString); ok {
			in.show(s.b)
		}
	case "TJ":
		if _, ok := in.last(tokArrayOpen); ok {
			for _, e := range in.arr {
				if e.kind == tokString {
					in.show(e.b)
				} else if e.kind == tokReal {
					in.tm = translate(-e.f/1000*in.size*in.hscale, 0).mul(in.tm)
				}
			}
		}
	case "Do":
		if o, ok := in.last(tokName); ok {
			return in.form(o.s)
		}
	}
	return nil
}

func (in *interp) move(tx, ty float64) {
	in.tlm = translate(tx, ty).mul(in.tlm)
	in.tm = in.tlm
}

// show writes one string operand and advances the text matrix by its
// width (§9.4.4), so that place can see the gaps between strings.
func (in *interp) show(raw []byte) {
	text, em, glyphs, spaces := in.font.decode(raw, in.x.scratch[:0])
	in.x.scratch = text
	trm := in.tm.mul(in.ctm)
	size := math.Abs(in.size) * math.Hypot(trm[2], trm[3])
	in.x.place(trm[4], trm[5], size)
	in.x.emit(text)
	adv := (em*in.size + float64(glyphs)*in.tc + float64(spaces)*in.tw) * in.hscale
	in.tm = translate(adv, 0).mul(in.tm)
	in.x.pos.endX = in.tm.mul(in.ctm)[4]
}

// fontNamed finds a font of the resources by name. The font dictionary's
// own text is the cache key (see fontFor), but to skip resolving it again
// on every page, a name is first looked up by the text of the /Font
// dictionary it is in, which holds references only ("/F1 3 0 R").
func (in *interp) fontNamed(name string) *fontDec {
	if f, ok := in.byName[name]; ok {
		return f
	}
	if in.byName == nil {
		in.byName = map[string]*fontDec{}
		fonts := in.res.Key("Font")
		if in.fontsKey = fonts.String(); len(in.fontsKey) > maxFontKey {
			in.fontsKey = ""
		}
	}
	key := in.fontsKey + "\x00" + name
	f, ok := in.x.byRef[key]
	if !ok || in.fontsKey == "" {
		f = in.x.fontFor(in.res.Key("Font").Key(name))
		if in.fontsKey != "" && len(in.x.byRef) < maxFonts {
			in.x.byRef[key] = f
		}
	}
	if len(in.byName) < maxFonts {
		in.byName[name] = f
	}
	return f
}

// form runs a form XObject, whose text counts as the page's (many
// producers put headers, footers or whole pages in forms).
func (in *interp) form(name string) error {
	if in.depth >= maxFormDepth || in.x.forms >= maxFormsPerPage {
		return nil
	}
	xo := in.res.Key("XObject").Key(name)
	if xo.Kind() != pdf.Stream || xo.Key("Subtype").Name() != "Form" {
		return nil
	}
	in.x.forms++
	m := ident
	if a := xo.Key("Matrix"); a.Len() == 6 {
		for i := range m {
			m[i] = a.Index(i).Float64()
		}
	}
	res := xo.Key("Resources")
	if res.IsNull() {
		res = in.res
	}
	sub := newInterp(in.x, res, m.mul(in.ctm), in.depth+1)
	sub.font, sub.size, sub.hscale = in.font, in.size, in.hscale
	return sub.exec(in.x.decoded(xo))
}
