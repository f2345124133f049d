package document

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
)

// What reading an Office file's XML costs is per token, not per byte of
// the file nor per character of text: encoding/xml allocates about 100
// bytes and spends about 120 ns on each token (an element's start or end,
// a run of text), so a 120 KB XLSX whose sheet inflates to 49 MB of empty
// cells (<c/>, two tokens in four bytes) cost 3.1 CPU-s and 2.9 GB of
// allocation to yield nothing (BenchmarkHostileFiles). MaxUncompressed
// cannot bound that: a genuine file of that size is fine, because it
// reaches MaxChars long before.
//
// So each document has a markup budget (markupMeter): every token of
// every part it reads is counted, as is every byte inflated for them, and
// the reading stops when
//   - the tokens exceed markupFreeTokens plus markupTokensPerChar for each
//     character of text seen so far (markup without text is refused early,
//     while a document whose text comes at the usual rate never meets it), or
//   - the tokens exceed markupMaxTokens, or the bytes markupMaxBytes,
//     whatever the text (a trickle of text cannot buy unbounded markup).
//
// A document stopped after some text keeps that text, marked truncated
// (as when MaxChars is reached); one stopped before any is refused with
// ErrTooComplex. The bounds are within the target of issue #33 (0.5 CPU-s
// and 64 MB of allocation for any attachment under the size cap) with the
// densest markup there is; see BenchmarkHostileFiles.
const (
	// markupFreeTokens is the markup allowed before any text: a
	// document's properties, a sheet's column definitions, a header with
	// a drawing. About 7 MB of allocation at the densest.
	markupFreeTokens = 64 << 10
	// markupTokensPerChar is the markup allowed for each character of
	// text beyond the free allowance. Word writes 1 to 10 tokens per
	// character (a run's properties repeated for every few characters);
	// tables of one-character cells come near 16.
	markupTokensPerChar = 16
	// markupMaxTokens is the most tokens one document may read, text or
	// not: about 45 MB of allocation and 0.05 CPU-s at the densest, and
	// 20,000 characters (MaxChars) at 20 tokens each.
	markupMaxTokens = 400 << 10
	// markupMaxBytes is the most XML one document may inflate to read
	// its text (MaxUncompressed is what the zip may declare): 400 bytes
	// for each of 20,000 characters. encoding/xml holds one token whole,
	// so this also bounds the largest single token's buffer.
	markupMaxBytes = 8 << 20
)

// markupMeter counts one document's markup against its budget.
type markupMeter struct {
	tokens, bytes int64
	// text is the characters of text seen so far: written to the output
	// and held in an XLSX's shared strings (which may be shown).
	text func() int
	err  error // set once the budget is spent: every later count fails
}

// fail spends the budget: the error, wrapping ErrTooComplex, that this
// and every later count returns.
func (m *markupMeter) fail(what string) error {
	m.err = fmt.Errorf("%w: %s after %d tokens and %d bytes of XML with %d characters of text",
		ErrTooComplex, what, m.tokens, m.bytes, m.text())
	return m.err
}

// token counts one token.
func (m *markupMeter) token() error {
	if m.err != nil {
		return m.err
	}
	m.tokens++
	switch {
	case m.tokens > markupMaxTokens:
		return m.fail("over the markup budget")
	case m.tokens > markupFreeTokens && m.tokens > markupFreeTokens+markupTokensPerChar*int64(m.text()):
		return m.fail("markup without text")
	}
	return nil
}

// read counts n bytes inflated for the XML parts.
func (m *markupMeter) read(n int) error {
	if m.err != nil {
		return m.err
	}
	m.bytes += int64(n)
	if m.bytes > markupMaxBytes {
		return m.fail("over the XML size budget")
	}
	return nil
}

// xmlCheckEvery is how many XML tokens are read between ctx checks (the
// entry reader checks too, per read; this covers a large buffered entry).
const xmlCheckEvery = 4096

// xmlPart is one part's XML being read, every token counted by the
// document's meter.
type xmlPart struct {
	ctx  context.Context
	d    *xml.Decoder
	m    *markupMeter
	name string
	n    int
}

func newXMLPart(ctx context.Context, r io.Reader, m *markupMeter, name string) *xmlPart {
	return &xmlPart{ctx: ctx, d: xml.NewDecoder(r), m: m, name: name}
}

// next is the part's next token; done at the part's end. The token's
// data is valid until the next call.
func (p *xmlPart) next() (tok xml.Token, done bool, err error) {
	if p.n++; p.n%xmlCheckEvery == 0 && p.ctx.Err() != nil {
		return nil, false, ctxErr(p.ctx)
	}
	if err := p.m.token(); err != nil {
		return nil, false, err
	}
	tok, err = p.d.Token()
	if errors.Is(err, io.EOF) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, xmlErr(p.name, err)
	}
	return tok, false, nil
}

// skip reads past the end of the element whose start was just read, every
// token counted (xml.Decoder.Skip would read them uncounted).
func (p *xmlPart) skip() error {
	for depth := 1; depth > 0; {
		tok, done, err := p.next()
		switch {
		case err != nil:
			return err
		case done:
			return xmlErr(p.name, io.ErrUnexpectedEOF)
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// stopped ends a document whose markup budget ran out: the text read so
// far, marked truncated, or ErrTooComplex when there is none.
func stopped(s *sink, err error) (Result, error) {
	if errors.Is(err, ErrTooComplex) && s.text > 0 {
		s.cut()
		return s.result(), nil
	}
	return Result{}, err
}
