package channels

import (
	"strings"
	"unicode/utf8"
)

// SplitText cuts text into parts of at most maxBytes bytes of UTF-8, preferring
// to cut after a paragraph, then a line, then a sentence end (Chinese or
// Western), then a space, and never inside a character. Parts are trimmed of
// the whitespace at the cut; empty parts are dropped.
func SplitText(text string, maxBytes int) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	if maxBytes < utf8.UTFMax {
		maxBytes = utf8.UTFMax
	}
	var parts []string
	for len(text) > maxBytes {
		cut := bestCut(text, maxBytes)
		part := strings.TrimSpace(text[:cut])
		if part != "" {
			parts = append(parts, part)
		}
		text = strings.TrimSpace(text[cut:])
	}
	if text != "" {
		parts = append(parts, text)
	}
	return parts
}

// sentenceEnds are the runes after which a cut reads naturally.
var sentenceEnds = []string{"。", "！", "？", "；", "…", ". ", "! ", "? ", "; "}

// bestCut returns the byte offset, at most maxBytes, at which to cut text
// (longer than maxBytes). It only returns offsets on rune boundaries.
func bestCut(text string, maxBytes int) int {
	window := text[:maxBytes]
	// Do not cut so early that parts become tiny: look for a boundary in the
	// second half of the window first.
	minCut := len(window) / 2
	if i := strings.LastIndex(window, "\n\n"); i >= minCut {
		return i + 2
	}
	if i := strings.LastIndex(window, "\n"); i >= minCut {
		return i + 1
	}
	best := -1
	for _, end := range sentenceEnds {
		if i := strings.LastIndex(window, end); i >= 0 && i+len(end) > best {
			best = i + len(end)
		}
	}
	if best >= minCut {
		return best
	}
	if i := strings.LastIndex(window, " "); i >= minCut {
		return i + 1
	}
	// No natural boundary: cut at the last complete rune.
	cut := maxBytes
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if cut == 0 {
		// The window holds part of a single rune; take the whole rune.
		_, size := utf8.DecodeRuneInString(text)
		return size
	}
	return cut
}

// TruncateUTF8 cuts s to at most n bytes on a rune boundary (a draft
// longer than a message shows its beginning; a quote or a file name from
// a platform is bounded).
func TruncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
