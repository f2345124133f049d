package agent

import (
	"slices"
	"strings"
)

// Statements: a message that only tells something about the asker (我是做
// 前端的，平时喜欢跑步; 我常驻上海办公室) or how they want to be answered
// (以后叫我小林就行) asks for no company data. Memory keeps it
// (gateway/memory); the model acknowledges it, with no skill on offer.
//
// A clause is such a statement by its verb, not its topic: a stative verb
// (the copula, a place, liking, a name: a closed class of the language)
// near its start, with the asker as its subject, said in the first clause
// and dropped after it; or, from now on (以后), a verb of addressing or
// answering whose object is the asker. A clause that asks anything — a
// question, a want, a request opener, a record's state, a look-up, a
// problem — is not one, nor one ending in a word of the catalog's skills
// (我在等报销到账, 我负责报销审批: the record is what the message is
// about).

var (
	// stativeVerbs state what the asker is, where, or likes.
	stativeVerbs = []string{"是", "在", "姓", "叫", "常驻", "住在", "来自", "喜欢", "爱", "讨厌", "习惯", "偏好", "擅长"}
	// placeVerbs take only a place (常驻上海办公室: not a record, though a
	// skill may name 办公室); 在 may also be "in the middle of" (我在等报销).
	placeVerbs = []string{"常驻", "住在", "来自"}
	// addressVerbs address or answer the asker.
	addressVerbs = []string{"叫我", "称呼我", "喊我", "回复我", "回答我", "跟我说", "和我说"}
	// statedWants make a statement a request: wantMarks but the runes
	// that are as often parts of words (办公室, 补贴, 记得).
	statedWants = []string{"要", "想", "需要", "请", "帮", "补办", "办理"}
	// fromNowOn open a preference.
	fromNowOn = []string{"以后", "今后", "往后", "从现在起", "从今天起"}
)

// maxStativeAt bounds the runes before a stative verb in its clause (平时
// 喜欢, 其实一直在).
const maxStativeAt = 4

// statesOnly: every clause is a statement about the asker or a preference
// of how to be answered, and the first is about the asker by 我 or is a
// preference. Without a catalog a record cannot be told from a statement:
// not one.
func statesOnly(parts []string, catalog *matcher) bool {
	if catalog == nil || len(parts) == 0 {
		return false
	}
	for i, p := range parts {
		c := strings.TrimRight(strings.TrimSpace(p), trailingParticles)
		if c == "" || asksSomething(c) {
			return false
		}
		if hasAnyPrefix(c, fromNowOn) && containsAny(c, addressVerbs) {
			continue
		}
		if i == 0 {
			var ok bool
			if c, ok = strings.CutPrefix(c, "我"); !ok {
				return false
			}
		}
		verb := stativeNear(c)
		if verb == "" || !slices.Contains(placeVerbs, verb) && endsWithRecord(c, catalog) {
			return false
		}
	}
	return true
}

// asksSomething: the clause asks for something or reports a problem.
func asksSomething(c string) bool {
	return containsAny(c, questionMarks) || containsAny(c, statedWants) || hasAnyPrefix(c, requestOpeners) ||
		containsAny(c, recordMarkers) || containsAny(c, lookupMarkers) || containsAny(c, problemMarks)
}

// stativeNear is the stative verb within the first maxStativeAt runes of
// c, "" when none.
func stativeNear(c string) string {
	r := []rune(c)
	for i := 0; i <= maxStativeAt && i < len(r); i++ {
		if v, _, ok := cutLongestPrefix(string(r[i:]), stativeVerbs); ok {
			return v
		}
	}
	return ""
}

// endsWithRecord: the clause's head, its last two runes before 的 or 了,
// is a word of the catalog's skills.
func endsWithRecord(c string, catalog *matcher) bool {
	c = strings.TrimRight(c, "的了")
	head := headNoun(c)
	if head == "" {
		return false
	}
	_, known := catalog.idf[head]
	return known
}
