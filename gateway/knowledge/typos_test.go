package knowledge

import (
	"slices"
	"testing"

	"github.com/hermes-gw/hermes/gateway/memory"
)

// TestTypoIsSearchedAsTheWordItSoundsLike: a bigram no passage holds is
// searched as the passages' bigrams of its sound that share one of its
// characters (婚家 → 婚假); a bigram typed right, one two characters away
// (饭几 and 返机 of 往返机场), or an asking word (时候 and 时后 of 小时后),
// is not.
func TestTypoIsSearchedAsTheWordItSoundsLike(t *testing.T) {
	x := &termIndex{ids: []int64{1, 2}, docs: []int64{1, 1}, nterms: []int32{3, 3}, avgTerms: 3,
		postings: map[string][]int32{"婚假": {0}, "几天": {0}, "返机": {1}, "机场": {1}, "时后": {1}}}
	x.indexSounds()
	added := func(query string) []string {
		var out []string
		terms := memory.Terms(query)
		for _, w := range x.soundAlikes(x.queryWeights(terms)) {
			if !slices.Contains(terms, w.term) {
				out = append(out, w.term)
			}
		}
		return out
	}
	if got := added("婚家几天"); !slices.Equal(got, []string{"婚假"}) {
		t.Errorf("婚家几天 searched with %v, want 婚假", got)
	}
	if got := added("婚假几天"); len(got) > 0 {
		t.Errorf("a question typed right searched with %v", got)
	}
	if got := added("早饭几点"); len(got) > 0 {
		t.Errorf("早饭几点 searched with %v", got)
	}
	if got := added("什么时候行权"); len(got) > 0 {
		t.Errorf("什么时候行权 searched with %v: an asking word is no typo", got)
	}
}
