package memory

import (
	"iter"
	"sort"
	"strings"
	"unicode"

	"github.com/hermes-gw/hermes/channels"
	"golang.org/x/text/unicode/norm"
)

// Bounds of Terms. A memory is at most MaxTextBytes, but a recall query is
// whatever the user wrote: only its first maxTermsInput bytes are read,
// and at most MaxTerms terms come out (the first ones in the text), so a
// query costs the same whatever its length.
const (
	// MaxTerms bounds the terms of one text. 64 bigrams cover a memory of
	// 65 Han characters (about 200 of its 300 bytes); a longer one is
	// recalled by its beginning.
	MaxTerms = 64
	// maxTermsInput is how much of a text is read.
	maxTermsInput = 4 << 10
	// maxWordBytes cuts a long ASCII-ish word (a token, a URL's piece):
	// its start still matches, and no term is large for the index.
	maxWordBytes = 32
)

// stopChars are Han characters that are grammar rather than meaning:
// particles, the copula and personal pronouns. They make no term, neither
// alone nor in a bigram: memories are in the first person and queries
// address Hermes, so bigrams such as 我在, 叫我 or 你知 would tie every note
// to every question. The cost is the rare word built on one (目的, 了解,
// 是否), which is then matched by its other bigrams only.
var stopChars = map[rune]bool{
	'的': true, '了': true, '吗': true, '嗎': true, '呢': true, '吧': true, '啊': true, '呀': true,
	'嘛': true, '么': true, '是': true, '我': true, '你': true, '您': true, '他': true, '她': true, '它': true,
}

// stopBigrams are common bigrams without a stop character that carry no
// meaning of their own (demonstratives, "a bit", "please").
var stopBigrams = map[string]bool{
	"一下": true, "一个": true, "这个": true, "那个": true, "哪个": true, "这些": true, "那些": true,
	"可以": true, "请问": true, "谢谢": true,
}

// Terms returns the lexical terms of text, deduplicated and sorted: what
// Recall matches a query against stored memories by.
//
// The text is NFKC-normalised and lowered first, so that full-width
// ＶＰＮ－１００１ and VPN-1001 are the same. Then:
//   - a run of letters and digits other than Han is one word, kept when it
//     has at least 2 characters (cut at 32 bytes): anything else separates
//     words, so VPN-1001 gives "vpn" and "1001" (an id typed with or
//     without its prefix still matches), while letters and digits written
//     together stay one word (ww123, wifi6);
//   - a run of Han characters gives every overlapping bigram (上海办公室:
//     上海 海办 办公 公室), Chinese having no spaces and most words being two
//     characters; a run of one character gives that character;
//   - stop characters and stop bigrams (above) give nothing.
//
// Other characters (punctuation, spaces, symbols, combining marks)
// separate runs.
func Terms(text string) []string { return TermsUpTo(text, MaxTerms, maxTermsInput) }

// TermsUpTo is Terms with other bounds: at most maxTerms terms from the
// first maxInput bytes of text. A knowledge passage (gateway/knowledge)
// is longer than a memory and needs all of its terms indexed; a query
// is still cut by Terms.
func TermsUpTo(text string, maxTerms, maxInput int) []string {
	text = strings.ToLower(norm.NFKC.String(channels.TruncateUTF8(text, maxInput)))
	c := collector{seen: map[string]bool{}, max: maxTerms}
	for run, han := range runs(text) {
		if c.full() {
			break
		}
		if han {
			c.han(run)
		} else {
			c.word(run)
		}
	}
	sort.Strings(c.terms)
	return c.terms
}

// collector gathers distinct terms in text order up to MaxTerms.
type collector struct {
	terms []string
	seen  map[string]bool
	max   int
}

func (c *collector) full() bool { return len(c.terms) >= c.max }

func (c *collector) add(term string) {
	if c.full() || c.seen[term] {
		return
	}
	c.seen[term] = true
	c.terms = append(c.terms, term)
}

// word adds a letter-and-digit run.
func (c *collector) word(run []rune) {
	if len(run) < 2 {
		return
	}
	c.add(channels.TruncateUTF8(string(run), maxWordBytes))
}

// han adds the bigrams of a Han run, or its one character.
func (c *collector) han(run []rune) {
	if len(run) == 1 {
		if !stopChars[run[0]] {
			c.add(string(run))
		}
		return
	}
	for i := 0; i+1 < len(run); i++ {
		if stopChars[run[i]] || stopChars[run[i+1]] {
			continue
		}
		if bigram := string(run[i : i+2]); !stopBigrams[bigram] {
			c.add(bigram)
		}
	}
}

// runs yields the maximal runs of text's Han characters (han true) and of
// its other letters and digits (han false), in order.
func runs(text string) iter.Seq2[[]rune, bool] {
	return func(yield func([]rune, bool) bool) {
		var run []rune
		var runHan bool
		flush := func() bool {
			if len(run) == 0 {
				return true
			}
			ok := yield(run, runHan)
			run = nil
			return ok
		}
		for _, r := range text {
			han := unicode.Is(unicode.Han, r)
			inWord := han || unicode.IsLetter(r) || unicode.IsDigit(r)
			if !inWord || han != runHan {
				if !flush() {
					return
				}
			}
			if inWord {
				run, runHan = append(run, r), han
			}
		}
		flush()
	}
}
