package document

import (
	"strings"
	"unicode/utf8"
)

// truncMarker ends a Text that was cut at MaxChars; it is counted in the
// budget, so Chars never exceeds MaxChars (unless MaxChars is smaller than
// the marker itself). A text that fits MaxChars is kept whole.
const truncMarker = "\n[truncated]"

var truncMarkerRunes = utf8.RuneCountInString(truncMarker)

// sink collects the text every extractor writes. It enforces MaxChars at a
// rune boundary, keeps only valid UTF-8 without control characters (the
// PDF fonts without a Unicode map emit raw bytes), and collapses runs of
// blank lines, so the budget is spent on text.
type sink struct {
	b     strings.Builder
	max   int  // MaxChars
	limit int  // runes of content allowed
	n     int  // runes in b
	nl    int  // newlines at the end of b
	last  rune // last rune written, 0 at the start
	full  bool // a write did not fit: the result is truncated
	text  int  // non-space runes written outside markers
}

func newSink(maxChars int) *sink {
	return &sink{max: maxChars, limit: maxChars}
}

// write appends s and reports whether there is room for more.
func (s *sink) write(str string) bool {
	return s.put(str, true)
}

func (s *sink) put(str string, counts bool) bool {
	if s.full {
		return false
	}
	for i, w := 0, 0; i < len(str); i += w {
		r := rune(str[i])
		w = 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRuneInString(str[i:])
		}
		if r == '\r' && i+1 < len(str) && str[i+1] == '\n' {
			continue
		}
		if !s.putRune(r, counts) {
			return false
		}
	}
	return true
}

// writeBytes is write for text decoded into a scratch buffer (PDF), so
// that showing a string costs no allocation.
func (s *sink) writeBytes(b []byte) bool {
	if s.full {
		return false
	}
	for i, w := 0, 0; i < len(b); i += w {
		r := rune(b[i])
		w = 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRune(b[i:])
		}
		if r == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			continue
		}
		if !s.putRune(r, true) {
			return false
		}
	}
	return true
}

// putRune appends one rune after cleaning it (see sink).
func (s *sink) putRune(r rune, counts bool) bool {
	switch {
	case r == utf8.RuneError || r == '\uFEFF':
		return true
	case r == '\r' || r == '\f' || r == '\v':
		r = '\n'
	case r < 0x20 && r != '\t' && r != '\n', r == 0x7f:
		return true
	}
	if r == '\n' {
		if s.n == 0 || s.nl >= 2 {
			return true
		}
		s.nl++
	} else {
		if s.n == 0 && (r == ' ' || r == '\t') {
			return true
		}
		s.nl = 0
	}
	if s.n >= s.limit {
		s.full = true
		return false
	}
	s.b.WriteRune(r)
	s.n++
	s.last = r
	if counts && r != ' ' && r != '\t' && r != '\n' && r != '\u3000' && r != '\u00a0' {
		s.text++
	}
	return true
}

// section starts a marker line such as "[page 3]" after a blank line. A
// marker that does not fit whole ends the text instead of being cut.
func (s *sink) section(label string) bool {
	if s.full {
		return false
	}
	if s.n > 0 {
		s.put("\n\n", false)
	}
	if s.n+utf8.RuneCountInString(label)+1 > s.limit {
		s.full = true
		return false
	}
	return s.put(label+"\n", false)
}

// space writes one space unless the text already ends in whitespace.
func (s *sink) space() {
	if s.n > 0 && s.last != ' ' && s.last != '\n' && s.last != '\t' {
		s.write(" ")
	}
}

// newline ends the current line unless it is already ended.
func (s *sink) newline() {
	if s.n > 0 && s.last != '\n' {
		s.write("\n")
	}
}

// grow reserves room for n bytes of text, so a large text is not copied
// as it grows (each copy leaves the old one as garbage).
func (s *sink) grow(n int) { s.b.Grow(n) }

// cut marks the text truncated though MaxChars was not reached (a PDF's
// decoded-content budget ran out after some text).
func (s *sink) cut() { s.full = true }

// result fills the text fields of a Result.
func (s *sink) result() Result {
	text := s.b.String()
	if s.full {
		// Make room for the marker, at a rune boundary.
		keep := max(s.max-truncMarkerRunes, 0)
		for i := range text {
			if keep == 0 {
				text = text[:i]
				break
			}
			keep--
		}
		text = strings.TrimRight(text, " \t\n")
		if text == "" {
			text = truncMarker[1:]
		} else {
			text += truncMarker
		}
	} else {
		text = strings.TrimRight(text, " \t\n")
	}
	return Result{Text: text, Chars: utf8.RuneCountInString(text), Truncated: s.full}
}
