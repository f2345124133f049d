package document

import (
	"bytes"
	"cmp"
	"io"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// decKind is how a font's string bytes become text.
type decKind uint8

const (
	decLatin   decKind = iota // no font or no usable map: printable ASCII only
	decSimple                 // the library's tables: WinAnsi, MacRoman, Differences, PDFDoc
	decCMap                   // the font's ToUnicode map
	decUTF16                  // a predefined Uni*-UCS2/UTF16 CMap: the bytes are UTF-16BE
	decCharset                // a predefined GBK/GB18030/Big5 CMap: the bytes are that charset
	decNone                   // a CID font without a Unicode map (Identity-H): no text
)

// cjkCMaps are the predefined CMaps (ISO 32000-1 §9.7.5.2, table 118)
// whose codes are a Unicode or Chinese encoding, so a font using one needs
// no ToUnicode map; Chinese producers rely on them.
var cjkCMaps = func() map[string]encoding.Encoding {
	m := map[string]encoding.Encoding{}
	for _, p := range []string{"UniGB", "UniCNS", "UniJIS", "UniKS"} {
		for _, u := range []string{"UCS2", "UTF16"} {
			m[p+"-"+u+"-H"], m[p+"-"+u+"-V"] = nil, nil // nil: UTF-16BE
		}
	}
	for _, p := range []string{"GB-EUC", "GBpc-EUC", "GBK-EUC", "GBKp-EUC", "GBT-EUC", "GBTpc-EUC"} {
		m[p+"-H"], m[p+"-V"] = simplifiedchinese.GBK, simplifiedchinese.GBK
	}
	m["GBK2K-H"], m["GBK2K-V"] = simplifiedchinese.GB18030, simplifiedchinese.GB18030
	for _, p := range []string{"B5pc", "ETen-B5", "ETenms-B5", "HKscs-B5"} {
		m[p+"-H"], m[p+"-V"] = traditionalchinese.Big5, traditionalchinese.Big5
	}
	return m
}()

// fontDec decodes a font's strings and measures them.
type fontDec struct {
	kind    decKind
	type0   bool       // two-byte codes unless the ToUnicode map says otherwise
	table   *[256]rune // simple fonts: code → rune, 0 for none
	charset encoding.Encoding
	cmap    *cmap
	// Widths in text-space units per unit of font size.
	first  int
	widths []float64          // simple fonts, from FirstChar
	cidW   map[uint32]float64 // CID fonts (code = CID, as for Identity-H)
	dw     float64            // default width
}

// Caps on a font's tables.
const (
	maxWidths      = 1 << 16
	maxCMapBytes   = 4 << 20
	maxCMapChars   = 1 << 17
	maxCMapRanges  = 1 << 12
	maxDifferences = 1024
)

func (x *pdfText) newFont(fv pdf.Value) *fontDec {
	f := &fontDec{kind: decLatin, dw: 0.5}
	_ = guard(func() { x.loadFont(f, fv) })
	return f
}

func (x *pdfText) loadFont(f *fontDec, fv pdf.Value) {
	sub := fv.Key("Subtype").Name()
	enc := fv.Key("Encoding")
	if sub == "Type0" {
		f.type0, f.kind, f.dw = true, decNone, 1
		desc := fv.Key("DescendantFonts").Index(0)
		if dw := desc.Key("DW"); dw.Kind() == pdf.Integer || dw.Kind() == pdf.Real {
			f.dw = dw.Float64() / 1000
		}
		f.cidW = cidWidths(desc.Key("W"))
		if enc.Kind() == pdf.Name {
			if cs, ok := cjkCMaps[enc.Name()]; ok {
				f.kind, f.charset = decUTF16, cs
				if cs != nil {
					f.kind = decCharset
				}
				return
			}
		}
	} else {
		scale := 1.0 / 1000
		if sub == "Type3" {
			if m := fv.Key("FontMatrix"); m.Len() == 6 {
				scale = m.Index(0).Float64()
			}
		}
		f.first = int(fv.Key("FirstChar").Int64())
		w := fv.Key("Widths")
		for i := 0; i < min(w.Len(), 256); i++ {
			f.widths = append(f.widths, w.Index(i).Float64()*scale)
		}
	}
	if tu := fv.Key("ToUnicode"); tu.Kind() == pdf.Stream {
		if m := x.readCMap(tu); m != nil {
			f.kind, f.cmap = decCMap, m
		}
		return // a map that failed is not retried through the library
	}
	// The library decodes a /Differences array by a scan per byte, so a
	// huge one would cost minutes at load; real ones list 256 names at most.
	if !f.type0 && enc.Key("Differences").Len() <= maxDifferences {
		lf := pdf.Font{V: fv}
		f.kind, f.table = decSimple, byteTable(lf.Encoder())
	}
}

// byteTable asks the library's encoding (WinAnsi, MacRoman, Differences,
// PDFDoc) for each byte once, so that decoding is a table lookup.
func byteTable(enc pdf.TextEncoding) *[256]rune {
	var t [256]rune
	for c := range t {
		r, _ := utf8.DecodeRuneInString(enc.Decode(string([]byte{byte(c)})))
		if r != utf8.RuneError {
			t[c] = r
		}
	}
	return &t
}

// cidWidths reads a CID font's /W: "c [w1 w2 …]" and "c1 c2 w" entries.
func cidWidths(w pdf.Value) map[uint32]float64 {
	if w.Kind() != pdf.Array {
		return nil
	}
	out := map[uint32]float64{}
	for i := 0; i+1 < w.Len() && len(out) < maxWidths; {
		c := w.Index(i).Int64()
		if next := w.Index(i + 1); next.Kind() == pdf.Array {
			for j := 0; j < next.Len() && len(out) < maxWidths; j++ {
				out[uint32(c)+uint32(j)] = next.Index(j).Float64() / 1000
			}
			i += 2
			continue
		}
		if i+2 >= w.Len() {
			break
		}
		hi, width := w.Index(i+1).Int64(), w.Index(i+2).Float64()/1000
		for k := c; k <= hi && len(out) < maxWidths; k++ {
			out[uint32(k)] = width
		}
		i += 3
	}
	return out
}

func (f *fontDec) width(code uint32, n int) float64 {
	switch {
	case f.type0:
		if w, ok := f.cidW[code]; ok {
			return w
		}
		return f.dw
	case int(code) >= f.first && int(code)-f.first < len(f.widths):
		if w := f.widths[int(code)-f.first]; w > 0 {
			return w
		}
	}
	return 0.5 * float64(n)
}

// decode appends the text of a string operand to out and returns it with
// the string's width in text-space units per unit of font size, its glyph
// count and its single-byte spaces (for Tc and Tw).
func (f *fontDec) decode(raw, out []byte) (_ []byte, em float64, glyphs, spaces int) {
	if f == nil || f.kind == decLatin || f.kind == decSimple {
		for _, c := range raw {
			em += f.simpleWidth(c)
			if c == ' ' {
				spaces++
			}
			switch {
			case f != nil && f.table != nil:
				if r := f.table[c]; r != 0 {
					out = utf8.AppendRune(out, r)
				}
			case c >= 0x20 && c < 0x7f:
				out = append(out, c)
			}
		}
		return out, em, len(raw), spaces
	}
	start := len(out)
	switch f.kind {
	case decCMap:
		for i := 0; i < len(raw); {
			n := f.cmap.codeLen(raw[i:], f.type0)
			code := codeOf(raw[i : i+n])
			out = append(out, f.cmap.lookup(n, code)...)
			em += f.width(code, 1)
			if n == 1 && code == ' ' {
				spaces++
			}
			glyphs++
			i += n
		}
		return out, em, glyphs, spaces
	case decUTF16:
		out = appendUTF16(out, raw)
	case decCharset:
		b, _ := f.charset.NewDecoder().Bytes(raw)
		out = append(out, bytes.ReplaceAll(b, []byte("\uFFFD"), nil)...)
	case decNone:
		return out, float64(len(raw)/2) * f.dw, len(raw) / 2, 0
	}
	for _, r := range string(out[start:]) {
		glyphs++
		if r < utf8.RuneSelf {
			em += 0.5
		} else {
			em += 1
		}
	}
	return out, em, glyphs, spaces
}

func (f *fontDec) simpleWidth(c byte) float64 {
	if f == nil {
		return 0.5
	}
	return f.width(uint32(c), 1)
}

// appendUTF16 appends big-endian UTF-16 as UTF-8, dropping an odd last
// byte and unpaired surrogates.
func appendUTF16(out, b []byte) []byte {
	for i := 0; i+1 < len(b); i += 2 {
		r := rune(b[i])<<8 | rune(b[i+1])
		if utf16.IsSurrogate(r) && i+3 < len(b) {
			r2 := rune(b[i+2])<<8 | rune(b[i+3])
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				out = utf8.AppendRune(out, d)
				i += 2
				continue
			}
		}
		if !utf16.IsSurrogate(r) {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

func codeOf[T string | []byte](b T) uint32 {
	var c uint32
	for i := 0; i < len(b); i++ {
		c = c<<8 | uint32(b[i])
	}
	return c
}

// utf16String decodes big-endian UTF-16, dropping an odd last byte.
func utf16String(s string) string { return string(appendUTF16(nil, []byte(s))) }

// readCMap reads a ToUnicode stream of at most maxCMapBytes decoded.
func (x *pdfText) readCMap(v pdf.Value) *cmap {
	var data []byte
	if guard(func() {
		var err error
		data, err = io.ReadAll(io.LimitReader(x.decoded(v), maxCMapBytes+1))
		if err != nil || len(data) > maxCMapBytes {
			data = nil
		}
	}) != nil || data == nil {
		return nil
	}
	return parseCMap(data)
}

type codespace struct {
	n      int
	lo, hi [4]byte
}

type cmRange struct {
	n      int
	lo, hi uint32
	dst    []uint16 // the first code's UTF-16; later codes add to the last unit
}

// cmap is a ToUnicode map (ISO 32000-1 §9.10.3): code spaces, single
// codes and ranges. Small ranges are expanded into chars for lookup by
// map; large ones are kept sorted for a binary search.
type cmap struct {
	spaces []codespace
	chars  map[uint64]string
	ranges []cmRange
}

type cmArg struct {
	s   string
	arr []string
}

func parseCMap(data []byte) *cmap {
	m := &cmap{chars: map[uint64]string{}}
	l := newLexer(bytes.NewReader(data), 512)
	var args []cmArg
	var arr []string
	inArr := false
	for {
		t := l.next()
		switch t.kind {
		case tokEOF:
			slices.SortFunc(m.ranges, func(a, b cmRange) int {
				return cmp.Or(cmp.Compare(a.n, b.n), cmp.Compare(a.lo, b.lo))
			})
			return m
		case tokString:
			switch {
			case inArr && len(arr) < 256:
				arr = append(arr, string(t.b))
			case !inArr && len(args) < 3*maxCMapRanges:
				args = append(args, cmArg{s: string(t.b)})
			}
		case tokArrayOpen:
			inArr, arr = true, nil
		case tokArrayClose:
			if inArr && len(args) < 3*maxCMapRanges {
				args = append(args, cmArg{arr: arr})
			}
			inArr = false
		case tokKeyword:
			switch string(t.b) {
			case "endcodespacerange":
				for i := 0; i+1 < len(args); i += 2 {
					m.addSpace(args[i].s, args[i+1].s)
				}
			case "endbfchar":
				for i := 0; i+1 < len(args); i += 2 {
					if n := len(args[i].s); n >= 1 && n <= 4 && len(m.chars) < maxCMapChars {
						m.chars[cmKey(n, codeOf(args[i].s))] = utf16String(args[i+1].s)
					}
				}
			case "endbfrange":
				for i := 0; i+2 < len(args); i += 3 {
					m.addRange(args[i].s, args[i+1].s, args[i+2])
				}
			}
			args = args[:0]
		}
	}
}

func cmKey(n int, code uint32) uint64 { return uint64(n)<<32 | uint64(code) }

func (m *cmap) addSpace(lo, hi string) {
	if len(lo) == 0 || len(lo) > 4 || len(lo) != len(hi) || len(m.spaces) >= 64 {
		return
	}
	c := codespace{n: len(lo)}
	copy(c.lo[:], lo)
	copy(c.hi[:], hi)
	m.spaces = append(m.spaces, c)
}

func (m *cmap) addRange(los, his string, dst cmArg) {
	n := len(los)
	if n == 0 || n > 4 || len(his) != n {
		return
	}
	lo, hi := codeOf(los), codeOf(his)
	if lo > hi {
		return
	}
	if dst.arr != nil {
		for i, s := range dst.arr {
			if uint32(i) > hi-lo || len(m.chars) >= maxCMapChars {
				break
			}
			m.chars[cmKey(n, lo+uint32(i))] = utf16String(s)
		}
		return
	}
	u := make([]uint16, len(dst.s)/2)
	for i := range u {
		u[i] = uint16(dst.s[2*i])<<8 | uint16(dst.s[2*i+1])
	}
	if len(u) == 0 {
		return
	}
	if hi-lo < 256 && len(m.chars)+int(hi-lo) < maxCMapChars {
		for c := lo; ; c++ {
			m.chars[cmKey(n, c)] = rangeText(u, c-lo)
			if c == hi {
				break
			}
		}
		return
	}
	if len(m.ranges) < maxCMapRanges {
		m.ranges = append(m.ranges, cmRange{n: n, lo: lo, hi: hi, dst: u})
	}
}

func rangeText(u []uint16, off uint32) string {
	v := append([]uint16(nil), u...)
	v[len(v)-1] += uint16(off)
	return string(utf16.Decode(v))
}

// codeLen is the byte length of the code at the start of s: the code
// space it falls in, else the shortest code space (§9.7.6.3), else one or
// two bytes by font type.
func (m *cmap) codeLen(s []byte, twoByte bool) int {
	shortest := 0
	for n := 1; n <= 4 && n <= len(s); n++ {
		for _, sp := range m.spaces {
			if sp.n != n {
				continue
			}
			ok := true
			for j := 0; j < n; j++ {
				if s[j] < sp.lo[j] || s[j] > sp.hi[j] {
					ok = false
					break
				}
			}
			if ok {
				return n
			}
		}
	}
	for _, sp := range m.spaces {
		if shortest == 0 || sp.n < shortest {
			shortest = sp.n
		}
	}
	switch {
	case shortest == 0 && twoByte:
		shortest = 2
	case shortest == 0:
		shortest = 1
	}
	return min(shortest, len(s))
}

func (m *cmap) lookup(n int, code uint32) string {
	if s, ok := m.chars[cmKey(n, code)]; ok {
		return s
	}
	// The last range starting at or below code, among those of length n.
	i, _ := slices.BinarySearchFunc(m.ranges, cmRange{n: n, lo: code}, func(a, b cmRange) int {
		return cmp.Or(cmp.Compare(a.n, b.n), cmp.Compare(a.lo, b.lo))
	})
	if i < len(m.ranges) && m.ranges[i].n == n && m.ranges[i].lo == code {
		i++
	}
	if i--; i >= 0 && m.ranges[i].n == n && code <= m.ranges[i].hi {
		return rangeText(m.ranges[i].dst, code-m.ranges[i].lo)
	}
	return ""
}
