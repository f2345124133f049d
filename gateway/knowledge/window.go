package knowledge

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/gateway/memory"
)

// What one search puts before the model. A rule's answer is a sentence
// or two (「婚假 3 天」, a table row), and every character given is read
// again at each later step of the run: so each passage is cut to the
// window of its sentences around the question's words, and the windows
// of one search share a budget, the best passage first. The heading path
// stays in the source (SourceOf), so a window is still placed.
const (
	// windowRunes bounds one passage's window.
	windowRunes = 300
	// searchRunes bounds the windows of one search together.
	searchRunes = 450
	// minWindowRunes: a passage whose window the budget would cut under
	// this is not given.
	minWindowRunes = 30
)

// ellipsis marks text left out of a window.
const ellipsis = "…"

// windows cuts each of ps to its window around terms, under the search's
// budget, dropping those the budget leaves no room for.
func windows(ps []Passage, terms []weighted) []Passage {
	left := searchRunes
	out := ps[:0]
	for _, p := range ps {
		budget := min(windowRunes, left)
		if budget < minWindowRunes {
			break
		}
		text := window(p.Text, terms, budget)
		// A window starting in a later section of a merged run is cited
		// by that section's heading (passages marks it 「[heading]」).
		if kept := strings.TrimPrefix(text, ellipsis); kept != text {
			skipped := p.Text[:max(0, strings.Index(p.Text, strings.TrimSuffix(kept, ellipsis)))]
			if h := lastMarker(skipped + firstLine(kept)); h != "" {
				p.Heading = h
			}
		}
		p.Text = text
		left -= runes(p.Text)
		out = append(out, p)
	}
	return out
}

// window is the run of text's sentences around its best one (the one
// holding the most weight of terms, the first of equals) of at most
// budget characters, grown towards the better neighbour (of equals,
// the next one and the previous in turn), with
// ellipses where text was left out.
func window(text string, terms []weighted, budget int) string {
	if runes(text) <= budget {
		return text
	}
	segs := sentences(text)
	score := make([]float64, len(segs))
	best := 0
	for i, s := range segs {
		score[i] = weightIn(s, terms)
		if score[i] > score[best] {
			best = i
		}
	}
	lo, hi := best, best+1 // segs[lo:hi]
	size := runes(segs[best])
	if size > budget {
		return cutAround(segs[best], terms, budget, best > 0, best < len(segs)-1)
	}
	for turn := 0; ; turn++ {
		next, prev := hi < len(segs), lo > 0
		if next && prev {
			// The better neighbour, else each side in turn.
			switch {
			case score[lo-1] > score[hi]:
				next = false
			case score[lo-1] == score[hi] && turn%2 == 1:
				next = false
			}
		}
		switch {
		case next && size+runes(segs[hi]) <= budget:
			size += runes(segs[hi])
			hi++
		case prev && size+runes(segs[lo-1]) <= budget:
			lo--
			size += runes(segs[lo])
		default:
			return mark(strings.TrimSpace(strings.Join(segs[lo:hi], "")), lo > 0, hi < len(segs))
		}
	}
}

// lastMarker is the heading of the last 「[heading]」 line of s, "" when
// it has none.
func lastMarker(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; len(l) > 2 && l[0] == '[' && l[len(l)-1] == ']' {
			return l[1 : len(l)-1]
		}
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// mark adds ellipses where text was cut.
func mark(s string, before, after bool) string {
	if before {
		s = ellipsis + s
	}
	if after {
		s += ellipsis
	}
	return s
}

// cutAround is budget characters of one long sentence from a little
// before its first matching term.
func cutAround(s string, terms []weighted, budget int, before, after bool) string {
	rs := []rune(s)
	at := len(rs)
	lower := strings.ToLower(s)
	for _, t := range terms {
		if i := strings.Index(lower, t.term); i >= 0 {
			at = min(at, utf8.RuneCountInString(lower[:i]))
		}
	}
	if at == len(rs) {
		at = 0
	}
	start := max(0, min(at-budget/4, len(rs)-budget))
	end := min(len(rs), start+budget)
	return mark(strings.TrimSpace(string(rs[start:end])), before || start > 0, after || end < len(rs))
}

// sentences splits text after each sentence's end (。！？, and their
// ASCII forms followed by a space) and each line, keeping every
// character: joined, they are text.
func sentences(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		end := false
		switch r {
		case '。', '！', '？', '\n':
			end = true
		case '.', '!', '?':
			end = i+1 < len(text) && text[i+1] == ' '
		}
		if end {
			j := i + utf8.RuneLen(r)
			out = append(out, text[start:j])
			start = j
		}
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// weightIn is the weight of terms that s holds.
func weightIn(s string, terms []weighted) float64 {
	have := memory.TermsUpTo(s, maxChunkTerms, maxChunkInput)
	w := 0.0
	for _, t := range terms {
		if _, ok := slices.BinarySearch(have, t.term); ok {
			w += t.weight
		}
	}
	return w
}
