package knowledge

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
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
	// plainRunes: past this, a window grows only by sentences holding
	// the question's words (and a numbered list's next steps). A rule's
	// answer is its sentence and the one or two around it; the rest of
	// its section is read at every later step of the run and answers
	// nothing. Over testdata/bench, 90 against no such limit: recall@5
	// 96.8% → 96.0%, the token ratio's median 1.54 → 1.48 (from 80 to
	// 100 the same recall).
	plainRunes = 90
)

// numberedStep is a line of a numbered list (「2. 以管理员身份运行」).
var numberedStep = regexp.MustCompile(`^\s*\d{1,2}[.、)）]`)

// ellipsis marks text left out of a window.
const ellipsis = "…"

// windows cuts each of ps to its window around terms, under the search's
// budget, dropping those the budget leaves no room for.
func windows(ps []Passage, terms []weighted, figure bool) []Passage {
	left := searchRunes
	out := ps[:0]
	for _, p := range ps {
		budget := min(windowRunes, left)
		if budget < minWindowRunes {
			break
		}
		text := window(p.Text, sectionOf(p.Heading, p.Title), withoutTitle(terms, p.Title), figure, budget)
		// A window starting in a later section of a merged run is cited
		// by that section's heading (passages leads its line with a marker).
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

// figureWords ask for a figure (a number of days, an amount, a date, a
// time, a share): the sentence answering them holds digits, often
// without any of the question's words (「酒店能报多少」 → 「每晚不超过 550
// 元」).
var figureWords = []string{"多少", "几", "多久", "多长", "多大", "多高", "多远", "上限", "下限", "比例", "什么时候", "何时", "哪天", "啥时候"}

// asksFigure: query asks for a figure.
func asksFigure(query string) bool {
	return slices.ContainsFunc(figureWords, func(w string) bool { return strings.Contains(query, w) })
}

// withoutTitle are terms less those of title: every passage of a
// document is indexed with its title, so they place a passage in its
// document, not a sentence in its passage (in 《差旅费报销标准》 the
// sentence naming the standard that it replaces is not the answer to
// 「差旅报销最晚多久交」).
func withoutTitle(terms []weighted, title string) []weighted {
	drop := memory.Terms(title)
	out := make([]weighted, 0, len(terms))
	for _, t := range terms {
		if !slices.Contains(drop, t.term) {
			out = append(out, t)
		}
	}
	return out
}

// window is the run of text's sentences around its best one (the one
// holding the most weight of terms, the first of equals) of at most
// budget characters, grown towards the better neighbour (of equals,
// the next one and the previous in turn), past plainRunes only by
// neighbours holding terms or a list's next step, with ellipses where
// text was left out. The first sentence is read with
// heading, as a merged section's first line is with its marker: a
// section's opening sentence states what its heading names (under 「住宿标准」,
// 「一线城市每晚不超过 550 元」 shares no word with 「酒店能报多少」).
func window(text, heading string, terms []weighted, figure bool, budget int) string {
	if runes(text) <= min(budget, plainRunes) {
		return text
	}
	segs := sentences(text)
	score := make([]float64, len(segs))
	// A sentence with a figure weighs, for a question asking for one, as
	// much more as the question's heaviest word.
	bonus := 0.0
	for _, t := range terms {
		bonus = max(bonus, t.weight)
	}
	best := 0
	for i, s := range segs {
		if i == 0 {
			s = heading + "\n" + s
		}
		score[i] = weightIn(s, terms)
		if figure && strings.ContainsFunc(s, unicode.IsDigit) {
			score[i] += bonus
		}
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
		// Past plainRunes, only neighbours holding the question's words
		// join, and the next steps of a numbered list (a how-to's
		// answer is its steps).
		if size >= plainRunes {
			next = next && (score[hi] > 0 || numberedStep.MatchString(segs[hi]) || strings.TrimSpace(segs[hi]) == "")
			prev = prev && (score[lo-1] > 0 || strings.TrimSpace(segs[lo-1]) == "")
		}
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

// marker leads the first line of a section merged into a passage
// (「[五、丧假] 员工的直系亲属…」), so that the model, and a window starting
// there, know which section it is.
func marker(section string) string { return "[" + section + "] " }

// lastMarker is the section of the last line of s led by a marker, ""
// when none is.
func lastMarker(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; strings.HasPrefix(l, "[") {
			if h, _, ok := strings.Cut(l[1:], "] "); ok && h != "" {
				return h
			}
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
			// 「2. 以管理员身份运行」: a step's number ends no sentence.
			end = i+1 < len(text) && text[i+1] == ' ' && !stepNumber(text[start:i])
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

// stepNumber: s, the start of a sentence up to a full stop, is a
// list's number.
func stepNumber(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && len(s) <= 2 && strings.Trim(s, "0123456789") == ""
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
