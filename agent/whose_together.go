package agent

import (
	"fmt"
	"regexp"
	"strings"
)

// The asker and someone else in one request (「我和对门工位的大刘谁的餐补
// 多」): the asker's part is answered, the other person's cannot be. Who
// that person is does not depend on a word list: the words joined to 我
// by 和/跟/与 are a noun phrase, read the way Chinese builds one —
// modifiers ending in 的, the head last (对门工位的大刘 → 大刘) — up to
// where what is asked of the two begins (谁, 俩, 这个月, 的 before the
// record, a word of the catalog's skills). So a colleague by a nickname,
// a title or a description no list holds is still someone else, whatever
// subject the model writes for its calls.

// togetherEnds end the phrase joined to the asker: what is asked of the
// two (谁的多, 俩, 比一比, 都, 一样) and the times of a record (这个月).
var togetherEnds = []string{"谁", "哪个", "哪位", "俩", "两个", "两人", "比", "都", "一样", "分别", "各自", "之间", "这个月",
	"上个月", "本月", "今年", "去年", "这周", "上周", "最近"}

// phraseSeparators end a noun phrase as punctuation does.
const phraseSeparators = "，,。；;！!？?：: \n"

// companion is the person a request joins to the asker (selfAlongside),
// "" when none is named (我们俩) or what is joined is the asker's own. The
// catalog, when not nil, tells a record (加班时长) from the person before
// it.
func companion(goal string, catalog *matcher) string {
	loc := selfAlongside.FindStringIndex(goal)
	if loc == nil {
		return ""
	}
	joiner := goal[loc[0]:loc[1]]
	var phrase string
	switch {
	case strings.HasPrefix(joiner, "我们") || strings.HasPrefix(joiner, "咱"):
		return "" // 我们俩: no one else named
	case strings.HasPrefix(joiner, "我"): // 我和X, 我的考勤和X的
		phrase = phraseAfter(goal[loc[1]:])
	default: // X和我
		phrase = phraseBefore(goal[:loc[0]])
	}
	return headOfPhrase(phrase, catalog)
}

// phraseAfter is the noun phrase at the start of s: up to what is asked
// of the two, else up to the 的 before the record (小王的考勤 → 小王).
func phraseAfter(s string) string {
	if i := strings.IndexAny(s, phraseSeparators); i >= 0 {
		s = s[:i]
	}
	end := -1
	for _, w := range togetherEnds {
		if i := strings.Index(s, w); i >= 0 && (end < 0 || i < end) {
			end = i
		}
	}
	if end >= 0 {
		return s[:end]
	}
	if i := strings.LastIndex(s, "的"); i >= 0 {
		return s[:i]
	}
	return s
}

// phraseBefore is the noun phrase at the end of s (帮我查查对门的大刘 →
// 对门的大刘): after the last separator and the last verb of asking.
func phraseBefore(s string) string {
	if i := strings.LastIndexAny(s, phraseSeparators); i >= 0 {
		s = s[i+1:]
	}
	for _, p := range personPrefix {
		if i := strings.LastIndex(s, p); i >= 0 && len(p) > 3 { // 看看, 查查, 帮我: not one-rune 和, 给
			s = s[i+len(p):]
		}
	}
	return s
}

// headOfPhrase is the head of a noun phrase: after its last 的 unless a
// record of the catalog follows it, without
// the asker's 我们 before a title (我们组长 → 组长), cut before a word
// of the catalog's skills after its first two runes (老李加班时长 → 老李).
func headOfPhrase(phrase string, catalog *matcher) string {
	phrase = strings.TrimSuffix(strings.TrimSpace(phrase), "的") // 二狗子的 (比一比)
	for {
		i := strings.LastIndex(phrase, "的")
		if i < 0 {
			break
		}
		// 师兄的餐补 (谁领得多): a record of the catalog after 的 is
		// what is asked, its holder before it.
		if head := phrase[i+len("的"):]; catalog == nil || headNoun(head) == "" || !knownToCatalog(head, catalog) {
			phrase = head
			break
		}
		phrase = phrase[:i]
	}
	phrase = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(phrase), "我们"), "我")
	r := []rune(phrase)
	if catalog != nil {
		for i := 2; i+1 < len(r); i++ {
			if _, known := catalog.idf[string(r[i:i+2])]; known && allHan(r[i:i+2]) {
				r = r[:i]
				break
			}
		}
	}
	return otherPerson(string(r))
}

// otherClauses cut an answer into clauses, each with its punctuation.
var otherClauses = regexp.MustCompile(`[^，,。；;！!？?：:\n]*[，,。；;！!？?：:\n]*`)

// aboutOthers mark a clause about the other person or about the two: a
// third person, or a comparison.
var aboutOthers = []string{"他", "她", "对方", "你们", "俩", "两人", "比"}

// ownPart is what of an answer to a request about the asker and who is
// about the asker alone: the clauses that name neither who (in any of
// their forms, nameForms) nor the two
// («大刘这个月的记录：迟到 0 次» → «迟到 0 次»). The skills answered for
// the asker only, so what is left is the asker's; Hermes labels it as
// theirs (presentWhose).
func ownPart(answer, who string) string {
	var b strings.Builder
	forms := nameForms(who)
	for _, c := range otherClauses.FindAllString(answer, -1) {
		if containsAny(c, forms) || containsAny(c, aboutOthers) {
			continue
		}
		b.WriteString(c)
	}
	own := strings.Trim(strings.TrimSpace(b.String()), phraseSeparators)
	if own != "" && !strings.ContainsAny(own[len(own)-1:], ".!?") && !hasAnySuffix(own, []string{"。", "！", "？"}) {
		own += "。" // a clause cut before its neighbour's comma ends the answer
	}
	return own
}

// ownAnswerOnly is the honest reply in place of an answer that presents
// the asker's records as who's: the sentence that who's data cannot be
// shown, or, when the request asked about the asker too, the answer's
// part about the asker alone, which presentWhose labels as theirs and
// puts after that sentence.
func (r *run) ownAnswerOnly(answer, who string) string {
	if r.selfToo {
		if own := ownPart(answer, who); own != "" {
			return own
		}
	}
	return fmt.Sprintf(r.opts.Messages.OwnDataOnly, who)
}
