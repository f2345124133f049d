package knowledge

import (
	"slices"
	"strings"
	"unicode"

	"github.com/mozillazg/go-pinyin"
)

// Employees type Chinese through pinyin input methods, and their typos
// are mostly a character of the same sound picked from the candidates:
// 婚家 for 婚假, 调修 for 调休, 报消 for 报销, 公基金 for 公积金. A typo's
// bigrams are in no passage, so the question loses exactly the words it
// is about. A question's Han bigram that no passage holds is therefore
// searched as the bigrams of the passages that sound the same (toneless
// pinyin, each character's first reading) and share one of its
// characters, at typoFactor of their weight. A bigram some passage holds is never replaced: a question
// typed right is searched as typed.

// typoFactor weighs a bigram that sounds like one the question wrote
// against one the question wrote.
const typoFactor = 0.8

// maxSoundAlikes bounds the bigrams one unknown bigram is searched as:
// common sounds (shi shi) have many.
const maxSoundAlikes = 4

// pinyinArgs is toneless pinyin (婚假 → hun jia); a character without
// a reading has none.
var pinyinArgs = pinyin.Args{Style: pinyin.Normal, Fallback: func(rune, pinyin.Args) []string { return nil }}

// soundOf is the toneless pinyin of a bigram of two Han characters
// ("hun jia"), "" for any other term or one without a reading.
func soundOf(term string) string {
	rs := []rune(term)
	if len(rs) != 2 || !unicode.Is(unicode.Han, rs[0]) || !unicode.Is(unicode.Han, rs[1]) {
		return ""
	}
	a, b := pinyin.SinglePinyin(rs[0], pinyinArgs), pinyin.SinglePinyin(rs[1], pinyinArgs)
	if len(a) == 0 || len(b) == 0 {
		return ""
	}
	return a[0] + " " + b[0]
}

// indexSounds maps the sound of each Han bigram of x's passages to the
// bigrams, sorted.
func (x *termIndex) indexSounds() {
	x.sounds = map[string][]string{}
	for term := range x.postings {
		if s := soundOf(term); s != "" {
			x.sounds[s] = append(x.sounds[s], term)
		}
	}
	for _, terms := range x.sounds {
		slices.Sort(terms)
	}
}

// soundAlikes adds to terms, for each of them no passage holds, the
// bigrams of the passages that sound the same, the most frequent first.
func (x *termIndex) soundAlikes(terms []weighted) []weighted {
	have := map[string]bool{}
	for _, t := range terms {
		have[t.term] = true
	}
	for _, t := range terms {
		// A question's asking words (什么时候, 多久) are absent from
		// documents written as rules, and are no typos of their words
		// (时候 is not 小时后's 时后).
		if len(x.postings[t.term]) > 0 || slices.ContainsFunc(figureWords, func(w string) bool { return strings.Contains(w, t.term) }) {
			continue
		}
		// One character of a word is picked wrong, not two: 饭几 of
		// 早饭几点 sounds like 返机 of 往返机场, and is no typo of it.
		alikes := slices.DeleteFunc(slices.Clone(x.sounds[soundOf(t.term)]), func(a string) bool { return !oneApart(a, t.term) })
		slices.SortStableFunc(alikes, func(a, b string) int { return len(x.postings[b]) - len(x.postings[a]) })
		for _, a := range alikes[:min(len(alikes), maxSoundAlikes)] {
			if !have[a] {
				have[a] = true
				terms = append(terms, weighted{a, typoFactor * x.idf(a)})
			}
		}
	}
	return terms
}

// oneApart: bigrams a and b differ in one character, in its place.
func oneApart(a, b string) bool {
	ra, rb := []rune(a), []rune(b)
	return len(ra) == 2 && len(rb) == 2 && (ra[0] == rb[0]) != (ra[1] == rb[1])
}
