package document

import (
	"io"
	"strconv"
)

// A lexer of PDF tokens (ISO 32000-1 §7.2–7.3), ours rather than the PDF
// library's because it serves three places the library does not bound:
// content streams and ToUnicode maps, where every token we keep has a cap
// (strings, names, keywords), and the checks of the file's structure made
// before the library is allowed to allocate anything.

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokInt
	tokReal
	tokString
	tokName
	tokKeyword
	tokArrayOpen
	tokArrayClose
	tokDictOpen
	tokDictClose
)

type token struct {
	kind tokKind
	i    int64   // tokInt
	f    float64 // tokInt and tokReal
	b    []byte  // tokString, tokName, tokKeyword; valid until the next token
}

func (t token) is(kw string) bool { return t.kind == tokKeyword && string(t.b) == kw }

// Caps on what one token keeps; the rest of it is read and dropped.
const (
	maxWord = 256 // names, keywords, numbers
)

type lexer struct {
	r      io.ByteScanner
	maxStr int // bytes kept of a string token
	buf    []byte
	err    error // the first read error other than io.EOF
}

func newLexer(r io.ByteScanner, maxStr int) *lexer {
	return &lexer{r: r, maxStr: maxStr}
}

func (l *lexer) readByte() (byte, bool) {
	c, err := l.r.ReadByte()
	if err != nil {
		if err != io.EOF && l.err == nil {
			l.err = err
		}
		return 0, false
	}
	return c, true
}

func (l *lexer) unread() { _ = l.r.UnreadByte() }

func isSpace(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\f', '\r', ' ':
		return true
	}
	return false
}

func isDelim(c byte) bool {
	switch c {
	case '<', '>', '(', ')', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (l *lexer) next() token {
	for {
		c, ok := l.readByte()
		if !ok {
			return token{kind: tokEOF}
		}
		switch {
		case isSpace(c):
			continue
		case c == '%':
			for ok && c != '\n' && c != '\r' {
				c, ok = l.readByte()
			}
			continue
		case c == '(':
			return l.literal()
		case c == '<':
			if c2, ok := l.readByte(); ok && c2 == '<' {
				return token{kind: tokDictOpen}
			} else if ok {
				l.unread()
			}
			return l.hex()
		case c == '>':
			if c2, ok := l.readByte(); ok && c2 == '>' {
				return token{kind: tokDictClose}
			} else if ok {
				l.unread()
			}
			return l.word(c)
		case c == '[':
			return token{kind: tokArrayOpen}
		case c == ']':
			return token{kind: tokArrayClose}
		case c == '/':
			return l.name()
		case isDelim(c): // { } ) on their own
			return token{kind: tokKeyword, b: append(l.buf[:0], c)}
		default:
			l.unread()
			return l.regular()
		}
	}
}

func (l *lexer) word(c byte) token {
	l.buf = append(l.buf[:0], c)
	return token{kind: tokKeyword, b: l.buf}
}

func (l *lexer) keep(c byte, limit int) {
	if len(l.buf) < limit {
		l.buf = append(l.buf, c)
	}
}

// literal reads a (string) after its "(": balanced parentheses, the
// escapes of §7.3.4.2, an unknown escape keeping its character.
func (l *lexer) literal() token {
	l.buf = l.buf[:0]
	depth := 1
	for {
		c, ok := l.readByte()
		if !ok {
			break
		}
		switch c {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return token{kind: tokString, b: l.buf}
			}
		case '\\':
			if c, ok = l.readByte(); !ok {
				return token{kind: tokString, b: l.buf}
			}
			switch c {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if c2, ok := l.readByte(); ok && c2 != '\n' {
					l.unread()
				}
				continue
			case '\n':
				continue
			case '0', '1', '2', '3', '4', '5', '6', '7':
				x := int(c - '0')
				for range 2 {
					d, ok := l.readByte()
					if !ok {
						break
					}
					if d < '0' || d > '7' {
						l.unread()
						break
					}
					x = x*8 + int(d-'0')
				}
				c = byte(x)
			}
		}
		l.keep(c, l.maxStr)
	}
	return token{kind: tokString, b: l.buf}
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// hex reads a <hex string> after its "<"; an odd final digit is
// followed by 0 (§7.3.4.3), other bytes are skipped.
func (l *lexer) hex() token {
	l.buf = l.buf[:0]
	hi := -1
	for {
		c, ok := l.readByte()
		if !ok || c == '>' {
			break
		}
		d := unhex(c)
		if d < 0 {
			continue
		}
		if hi < 0 {
			hi = d
			continue
		}
		l.keep(byte(hi<<4|d), l.maxStr)
		hi = -1
	}
	if hi >= 0 {
		l.keep(byte(hi<<4), l.maxStr)
	}
	return token{kind: tokString, b: l.buf}
}

// name reads a /Name after its "/", decoding #xx escapes.
func (l *lexer) name() token {
	l.buf = l.buf[:0]
	for {
		c, ok := l.readByte()
		if !ok {
			break
		}
		if isSpace(c) || isDelim(c) {
			l.unread()
			break
		}
		if c == '#' {
			h, ok1 := l.readByte()
			g, ok2 := l.readByte()
			if ok1 && ok2 && unhex(h) >= 0 && unhex(g) >= 0 {
				c = byte(unhex(h)<<4 | unhex(g))
			} else {
				// Not an escape the library would accept either; keep
				// the bytes as they are.
				if ok2 {
					l.unread()
				}
				l.keep('#', maxWord)
				if ok1 {
					c = h
				}
			}
		}
		l.keep(c, maxWord)
	}
	return token{kind: tokName, b: l.buf}
}

// regular reads a number or a keyword.
func (l *lexer) regular() token {
	l.buf = l.buf[:0]
	long := false
	for {
		c, ok := l.readByte()
		if !ok {
			break
		}
		if isSpace(c) || isDelim(c) {
			l.unread()
			break
		}
		if len(l.buf) >= maxWord {
			long = true
			continue
		}
		l.buf = append(l.buf, c)
	}
	if !long {
		if t, ok := number(l.buf); ok {
			return t
		}
	}
	return token{kind: tokKeyword, b: l.buf}
}

// number parses an integer or a real as the PDF library does: an optional
// sign, digits, and at most one dot.
func number(b []byte) (token, bool) {
	s := b
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) == 0 {
		return token{}, false
	}
	dots := 0
	for _, c := range s {
		switch {
		case c == '.':
			dots++
		case c < '0' || c > '9':
			return token{}, false
		}
	}
	switch {
	case dots == 0:
		i, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			f, _ := strconv.ParseFloat(string(b), 64)
			return token{kind: tokReal, f: f}, true
		}
		return token{kind: tokInt, i: i, f: float64(i)}, true
	case dots == 1 && len(s) > 1:
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return token{}, false
		}
		return token{kind: tokReal, f: f}, true
	}
	return token{}, false
}

// skipInlineImage skips the data of an inline image after its ID operator:
// up to whitespace, "EI", and whitespace or the end (§8.9.7). Binary image
// bytes must not be lexed as operators.
func (l *lexer) skipInlineImage() {
	state := 0 // 1: seen whitespace then E; 2: then I
	afterSpace := false
	for {
		c, ok := l.readByte()
		if !ok {
			return
		}
		switch {
		case state == 2 && isSpace(c):
			return
		case state == 1 && c == 'I':
			state = 2
		case c == 'E' && afterSpace:
			state = 1
		default:
			state = 0
		}
		afterSpace = isSpace(c)
	}
}
