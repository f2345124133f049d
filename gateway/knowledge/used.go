package knowledge

import (
	"regexp"
	"slices"

	"github.com/hermes-gw/hermes/gateway/memory"
)

// An answer used a passage when it repeats a figure of it (a number the
// question did not bring: 3 天, 550 元, 5F) or enough of its words. The
// model is not asked which passages it used: what it says about its
// sources is not trusted to name only what it was given.
const (
	// minSharedTerms is how many of a passage's terms (Han bigrams, ASCII
	// words) an answer must repeat to have used it without a figure.
	// 「公司文档中没有关于婚假的规定」 repeats 2-3 of a 婚假 passage's.
	minSharedTerms = 5
)

var figure = regexp.MustCompile(`\d+(?:\.\d+)?`)

// Used are the passages of ps that reply used, in ps' order.
func Used(reply string, ps []Passage) []Passage {
	if len(ps) == 0 || reply == "" {
		return nil
	}
	replyTerms := memory.TermsUpTo(reply, maxChunkTerms, maxChunkInput)
	replyFigures := figure.FindAllString(reply, -1)
	var out []Passage
	for _, p := range ps {
		if usedFigure(replyFigures, p.Text) || shared(replyTerms, memory.TermsUpTo(p.Text, maxChunkTerms, maxChunkInput)) >= minSharedTerms {
			out = append(out, p)
		}
	}
	return out
}

// usedFigure: a number of the reply is one of text's.
func usedFigure(figures []string, text string) bool {
	if len(figures) == 0 {
		return false
	}
	for _, f := range figure.FindAllString(text, -1) {
		if slices.Contains(figures, f) {
			return true
		}
	}
	return false
}

// shared counts the terms of two sorted, distinct lists in both.
func shared(a, b []string) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n, i, j = n+1, i+1, j+1
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}
