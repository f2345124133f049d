package agent

import (
	"regexp"
	"slices"
	"strings"
)

// Statements: a message that only tells something about the asker (我是做
// 前端的，平时喜欢跑步; 我常驻上海办公室), how they want to be answered
// (以后叫我小林就行) or how they feel (今天是周五，心情不错) asks for no
// company data. Memory keeps it
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
// about). After a request, a statement is that request's detail (你在哪
// 层？我在三楼): offerTools keeps the skills then.

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

// statesOnly: every clause is a statement about the asker (a stative
// verb; an event of theirs when the message also says how they feel; or,
// after a first clause saying who they are, anything naming nothing held),
// a preference of how to be answered, or a feeling (今天是周五，心情不错;
// 我下个月结婚，好紧张啊). Without a catalog a record cannot be told from a
// statement: not one.
func statesOnly(parts []string, catalog *matcher) bool {
	if catalog == nil || len(parts) == 0 {
		return false
	}
	feels := slices.ContainsFunc(parts, func(p string) bool { return feeling(p, catalog) })
	self := statesSelf(strings.TrimSpace(parts[0]), true, catalog)
	for i, p := range parts {
		c := strings.TrimRight(strings.TrimSpace(p), trailingParticles)
		switch {
		case c == "" || asksSomething(p): // 呢, 吗 ask
			return false
		case hasAnyPrefix(c, fromNowOn) && containsAny(c, addressVerbs):
		case statesSelf(c, i == 0, catalog), feeling(p, catalog):
		case feels: // what the feeling is about: 我下个月结婚, 这周五发年终奖
		case self && !namesHeld(c, catalog): // more of the asker: 我是个夜猫子，早上总起不来
		default:
			return false
		}
	}
	return true
}

// statesSelf: c is a statement with a stative verb near its start, about
// the asker or the day (said by 我 or a time in the first clause, dropped
// after it: 我是做前端的，平时喜欢跑步; 今天是周五), whose head is no record
// of the catalog unless the verb takes only a place.
func statesSelf(c string, first bool, catalog *matcher) bool {
	if first {
		rest, ok := strings.CutPrefix(c, "我")
		if loc := deicticTimes.FindStringIndex(c); !ok && loc != nil && loc[0] == 0 {
			rest, ok = c[loc[1]:], true
		}
		if !ok {
			return false
		}
		c = rest
	}
	verb := stativeNear(c)
	return verb != "" && (slices.Contains(placeVerbs, verb) || !endsWithRecord(c, catalog))
}

// feelingPredicate is how someone feels or finds something: a degree or a
// negation before one to three runes ending the clause (好紧张啊, 太累了,
// 心情不错), after a topic of at most three runes (压力好大); or one or two
// runes with a complement of degree (累死了, 开心极了).
var feelingPredicate = regexp.MustCompile(`^(\p{Han}{0,3}?(好|太|真|挺|很|超|有点|特别|非常|不)\p{Han}{1,3}|` +
	`\p{Han}{1,2}(死了|极了|得不行|得要命))[了啊呀吧哦呢～~!！]*$`)

// feeling: the clause says how the asker feels, when (最近) left out, and
// names nothing the company's systems hold (电脑好卡 reports a problem
// with a record).
func feeling(clause string, catalog *matcher) bool {
	c := deicticTimes.ReplaceAllString(strings.TrimSpace(clause), "")
	return feelingPredicate.MatchString(c) && !namesHeld(c, catalog)
}

// deicticTimes are times said from now (下个月, 今天, 周五): skills'
// descriptions mention months and weeks, which says nothing of a record.
var deicticTimes = regexp.MustCompile(`(上|下|这|本|每)个?(月|周|星期|季度)|(今|去|明|前)年|(今|明|昨|后|前)天|(周|星期)[一二三四五六日天末]|最近|近来`)

// namesHeld: c names a word of the catalog's skills (two Han runes),
// times left out.
func namesHeld(c string, catalog *matcher) bool {
	r := []rune(deicticTimes.ReplaceAllString(c, "，"))
	for i := 0; i+1 < len(r); i++ {
		if !allHan(r[i : i+2]) {
			continue
		}
		if _, known := catalog.idf[string(r[i:i+2])]; known {
			return true
		}
	}
	return false
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
