package agent

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// minUserTokens is what the user's text keeps even when the system prompt
// and skill index use up MaxInputTokens: a question cut to nothing cannot
// be answered, and the model's window is far larger than the input budget.
const minUserTokens = 256

// invisible are format characters that only hide text: zero-width spaces,
// the BOM, word joiners and bidirectional overrides (which can make a
// message read differently to a person than to the model). Joiners inside
// emoji (U+200D) stay.
var invisible = map[rune]bool{
	'\u200B': true, '\uFEFF': true, '\u2060': true, '\u00AD': true,
	'\u202A': true, '\u202B': true, '\u202C': true, '\u202D': true, '\u202E': true,
	'\u2066': true, '\u2067': true, '\u2068': true, '\u2069': true,
}

// normalizeText prepares the user's text: Unicode NFC (so "é" typed two
// ways is one string for triggers and the model), control and invisible
// characters removed, runs of spaces collapsed to one, at most one blank
// line in a row, and no space at line ends. Line breaks stay: lists and
// pasted logs keep their shape.
func normalizeText(s string) string {
	s = norm.NFC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space, newlines := false, 0
	for _, r := range strings.ReplaceAll(s, "\r\n", "\n") {
		switch {
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			space = false
			newlines++
		case unicode.IsSpace(r):
			space = true
		case unicode.IsControl(r) || invisible[r]:
			// dropped
		default:
			if newlines > 0 && b.Len() > 0 {
				b.WriteString(strings.Repeat("\n", min(newlines, 2)))
			} else if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space, newlines = false, 0
			b.WriteRune(r)
		}
	}
	return b.String()
}

// budgetUserText cuts text to what MaxInputTokens leaves after the system
// prompt (which already holds the skill index): the system prompt is
// placed first, so a long prompt squeezes the user's text, never the other
// way round. It keeps the start and the end (a pasted log usually ends
// with the question) and says what was cut. truncated is a trace note,
// empty when nothing was cut.
func budgetUserText(text, system string, maxInput int) (out, truncated string) {
	budget := max(maxInput-countTokens(system), minUserTokens)
	if len(text) <= budget { // a token is at least one byte: fits for sure
		return text, ""
	}
	head, tail, total := truncateTokens(text, budget*2/3, budget/3)
	if tail == "" && head == text {
		return text, ""
	}
	kept := budget
	out = fmt.Sprintf("%s\n[… the message was too long: %d of its %d tokens are left out here …]\n%s",
		head, total-kept, total, tail)
	return out, fmt.Sprintf("input truncated: %d → %d tokens", total, kept)
}

// containsAny reports whether s contains any of words: the word checks of
// the chit-chat, whose-data and offline decisions share it.
func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
