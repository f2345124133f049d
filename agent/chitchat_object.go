package agent

import (
	"regexp"
	"slices"
	"strings"
)

// The object of a producing act, and acts that ask for an opinion.
//
// What a producing verb (写, 出, 做, 给 …) makes is decided by its object,
// read as Chinese builds a noun phrase: an optional quantity (numeral and
// classifier: 一份, 几道, 点), modifiers ending in 的, and the head noun
// last (「几道 新人培训的 考题」: the head is 考题, 培训 only says what it is
// about). The head noun decides:
//
//   - a kind of text (方案, 欢迎词, 考题 …) is produced;
//   - a word the catalog's skills use (证明, 报修单, 预约, 会议室) is a
//     record or an object of the company's systems: a request;
//   - any other noun after a quantity or a writing verb is something to
//     produce: no skill has it, so no skill can make it (议程, 话术).
//
// An opinion asked for (which of two is better, how to say something to
// someone, 分析一下 on nothing or on no record) is produced text too.

// numerals may open a quantity: 一份, 几道, 两条, 3个.
const numerals = "一二两三四五六七八九十几数多0123456789"

// classifiers count things in a quantity: a closed class of the
// language, not a list of topics.
var classifiers = []string{"个", "份", "段", "篇", "首", "封", "句", "条", "本", "道", "张", "套", "版", "则", "组", "项", "种",
	"款", "页", "点", "些", "批", "轮", "部", "场", "支", "副", "幅"}

// textClassifiers count pieces of text: 写一段, 来一首, 推荐几本, 列几条.
var textClassifiers = []string{"段", "篇", "首", "封", "句", "则", "本", "条"}

// bareClassifiers stand for a quantity without a numeral only before a
// noun (点话术, 些建议); 点个外卖 is the verb 点.
var bareClassifiers = []string{"点", "些"}

// oneDropped are the classifiers whose 一 speech drops after a verb (写个
// 方案, 写段话, 来首诗, 写封信): they count one thing without a numeral.
// 本 is not among them (出本月的报表: 本 is "this").
var oneDropped = []string{"个", "段", "篇", "首", "封", "句"}

// tryingTails end a request with "and let me hear/see it": not part of
// the object.
var tryingTails = []string{"听听", "看看", "瞧瞧"}

// objectPhrase is what follows a producing verb.
type objectPhrase struct {
	counted bool   // a quantity opens it: a thing to produce
	textual bool   // counted in pieces of text (一段, 一封)
	some    bool   // an amount, not a number of things (来点鸡汤, 给些思路): content
	noun    string // the phrase after the quantity, particles trimmed
}

// readObject reads the object phrase at the start of s (after the verb).
func readObject(s string) objectPhrase {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "一下")
	var o objectPhrase
	if rest, cl, ok := cutQuantity(s); ok {
		o.counted, o.textual = true, hasAnyPrefix(cl, textClassifiers)
		// 点 and 些 are an amount alone or after 一 (来点鸡汤, 一些思路);
		// after another numeral 点 is the hour (几点上班).
		numeral := strings.TrimSuffix(strings.TrimSuffix(s, rest), cl)
		o.some = slices.Contains(bareClassifiers, cl) && (numeral == "" || numeral == "一")
		s = rest
	}
	o.noun = strings.TrimRight(s, trailingParticles)
	for _, t := range tryingTails {
		o.noun = strings.TrimSuffix(o.noun, t) // 讲个段子听听
	}
	return o
}

// cutQuantity cuts a quantity (numerals, then one classifier) off the
// start of s: the rest and the classifier.
func cutQuantity(s string) (rest, classifier string, ok bool) {
	r := []rune(s)
	n := 0
	for n < len(r) && strings.ContainsRune(numerals, r[n]) {
		n++
	}
	after := string(r[n:])
	for _, c := range classifiers {
		tail, found := strings.CutPrefix(after, c)
		if !found {
			continue
		}
		// Without a numeral only the classifiers whose 一 is dropped
		// (写个方案, 写段话) and 点, 些 before a noun count (点话术); 点个
		// 外卖 is the verb 点, 点子 a word.
		if n == 0 && (!slices.Contains(oneDropped, c) && !slices.Contains(bareClassifiers, c) || tail == "" || hasAnyPrefix(tail, classifiers) || hasAnyPrefix(s, writtenThings)) {
			return s, "", false
		}
		return tail, c, true
	}
	return s, "", false
}

// unknownVerbMakesText: a verb no skill of the catalog uses (攒, 憋)
// before a counted piece of text (一段开场白) produces it: no skill can
// act with it.
func unknownVerbMakesText(c string, catalog *matcher) bool {
	r := []rune(c)
	if catalog == nil || len(r) < 3 || !allHan(r[:1]) {
		return false
	}
	if _, known := catalog.idf[string(r[:1])]; known {
		return false
	}
	o := readObject(string(r[1:]))
	return o.counted && (o.textual || namesText(o.noun))
}

// headNoun is the last two runes of a noun phrase when they are Han: the
// head of a Chinese compound (在职证明 → 证明, 新人培训的考题 → 考题).
func headNoun(phrase string) string {
	r := []rune(phrase)
	if len(r) < 2 || !allHan(r[len(r)-2:]) {
		return ""
	}
	return string(r[len(r)-2:])
}

// namesText: the object is a kind of text by its head (方案, 欢迎词).
func namesText(noun string) bool {
	for _, w := range writtenThings {
		if strings.HasSuffix(noun, w) {
			return true
		}
	}
	return false
}

// knownToCatalog: a skill's text uses the head noun, so it is something
// the company's systems hold or act on.
func knownToCatalog(noun string, catalog *matcher) bool {
	head := headNoun(noun)
	if head == "" {
		return true // no Han head (a Latin word: VPN): not known to be a text
	}
	_, known := catalog.idf[head]
	return known
}

// verbKind is how a producing verb relates to its object.
type verbKind uint8

const (
	givingVerb  verbKind = iota // 给, 来, 推荐: a kind of text is produced, anything else handed over
	makingVerb                  // 出, 做, 列: what they count is made
	writingVerb                 // 写, 拟: what they name is written, counted or not
)

func verbKindOf(verb string) verbKind {
	switch {
	case slices.Contains(writingVerbs, verb) || slices.Contains(askingVerbs, verb):
		return writingVerb
	case slices.Contains(makingVerbs, verb):
		return makingVerb
	}
	return givingVerb
}

// producesText: the object phrase after a producing verb of kind k is
// something to produce: a kind of text, or a noun no skill uses that a
// writing verb names, a making verb counts or any verb gives an amount
// of (写请假说明, 出几道考题, 来点鸡汤; 给个五星 hands over a rating).
func producesText(o objectPhrase, k verbKind, catalog *matcher) bool {
	switch {
	case o.textual || namesText(o.noun):
		return true
	case o.noun == "":
		// 帮我写一下: the text the clauses before describe.
		return k == writingVerb && !o.counted
	case catalog == nil:
		return false
	case k == writingVerb || k == makingVerb && o.counted || o.some:
		return !knownToCatalog(o.noun, catalog)
	}
	return false
}

// adviseVerbs ask for an assessment or an opinion of what the message
// gives; 评价 is not one of them, it is an action of skills (rate a
// ticket).
var adviseVerbs = []string{"分析", "比较", "对比", "权衡", "评估", "点评", "参谋", "出出主意", "支支招", "支个招"}

// opinionQuestions ask which of two is better, whether to do something,
// or how to say something to someone: the answer is an opinion or a
// wording, not a record.
var opinionQuestions = regexp.MustCompile(`还是[^不没也]|` +
	`哪(个|种|样|一个|家).{0,8}(更|比较|最)(好|合适|划算|值得|靠谱|适合)|哪(个|种|样|一个|家)(好|合适|划算|值得|靠谱|实惠)|` +
	`值不值|该不该|合不合适|要不要|需不需要|(合适|靠谱)[吗吧]?$|怎么办|咋办|^(觉得|认为)|(点|些)(啥|什么)[呢吗啊]?$|有(什么|啥|哪些).{0,12}推荐|(什么|啥|哪些).{0,6}(好|合适)[呢吗啊]?$|` +
	`(怎么|如何|怎样|咋|哪儿|哪里|去哪).{0,8}(比较好|才好|更好|合适|得体)[呢吗啊]?$|(怎么|如何|怎样)[^，。]{1,6}地|` +
	`(怎么|如何|怎样|咋)(写|说|讲|措辞|表达|开口|回复)|` +
	`(怎么|如何|怎样|咋)(跟|和|向|对|给).{1,12}(说|开口|沟通|表达|回复|回绝|拒绝|提|谈|讲)`)

// howWords ask how to do something.
var howWords = []string{"怎么", "如何", "怎样", "咋"}

// whyAdverbs after 怎么 make it "why" or "how is it" (怎么还没, 怎么比平时
// 少了, 怎么回事, 怎么样): a complaint or a state asked, not a how-to.
const whyAdverbs = "还没不又会都就这那才老总一比回样了多少"

// howTo: the clause asks how to do an act (the two runes after 怎么) that
// no skill of the catalog names.
func howTo(c string, catalog *matcher) bool {
	for _, w := range howWords {
		_, rest, ok := strings.Cut(c, w)
		if !ok {
			continue
		}
		r := []rune(rest)
		if len(r) < 2 || !allHan(r[:2]) || strings.ContainsRune(whyAdverbs, r[0]) {
			return false // 怎么还没人处理 asks why, a complaint
		}
		_, known := catalog.idf[string(r[:2])]
		return !known
	}
	return false
}

// generalQuestion asks what one should do or what a kind of thing
// generally holds: a modal or 一般 (要, 该, 需要, 一般 …), the act, and
// "what" ending the question, with at most a noun after it (新人第一天上班
// 要注意啥, 交接文档一般包含哪些部分). Groups: the act, the noun.
var generalQuestion = regexp.MustCompile(`(?:要|该|应该|应当|需要|一般|通常|主要|大概)([^，。]{1,6}?)(?:什么样|啥样|怎样|怎么样|啥|什么|哪些)([^，。]{0,4}?)[呢吗啊呀]?$`)

// asksGenerally: the clause is a general question (generalQuestion) about
// no one in particular, whose act and noun are no skill's (要订什么会议室
// asks for a booking, 请假要走什么流程 for a skill's process): advice or
// knowledge the model or the company's documents give, not a record.
func asksGenerally(c string, catalog *matcher) bool {
	g := generalQuestion.FindStringSubmatch(c)
	if g == nil || otherSubject(c) != "" || containsAny(c, deictics) {
		return false
	}
	act := []rune(strings.TrimSuffix(g[1], "是")) // the copula names no act: 一般是怎样的
	if len(act) == 1 {
		if _, known := catalog.idf[string(act)]; known {
			return false // 要订什么: one rune says too little
		}
	}
	for i := 0; i+1 < len(act); i++ {
		if _, known := catalog.idf[string(act[i:i+2])]; known {
			return false
		}
	}
	noun := strings.TrimSuffix(g[2], "的") // 怎样的
	return noun == "" || !knownToCatalog(noun, catalog)
}

// deictics point at one record (这张单子还要补什么): a question about it,
// not a general one.
var deictics = []string{"这张", "这笔", "这个单", "这单", "那张", "那笔", "这条", "那条"}

// ideaAsks follow 有 in a question asking what there is: 有什么, 有哪些.
var ideaAsks = []string{"什么", "啥", "哪些"}

// advises: the clause asks for an opinion: an advise verb whose object
// is nothing (the clauses before it) or no record, or an opinion
// question.
func advises(c string, catalog *matcher) bool {
	if opinionQuestions.MatchString(c) {
		return true
	}
	// 怎么暖场: how to do what no skill does (怎么报销 is a skill's).
	if catalog != nil && (howTo(c, catalog) || asksGenerally(c, catalog)) {
		return true
	}
	// 有什么省钱的玩法: ideas asked for, unless what is asked for is
	// something the catalog holds (有什么福利).
	if _, rest, ok := strings.Cut(c, "有"); ok && hasAnyPrefix(rest, ideaAsks) {
		_, what, _ := cutLongestPrefix(rest, ideaAsks)
		o := readObject(what)
		return o.noun != "" && (namesText(o.noun) || catalog != nil && !knownToCatalog(o.noun, catalog))
	}
	c = afterBenefactive(c)
	for _, v := range adviseVerbs {
		if rest, ok := strings.CutPrefix(c, v); ok {
			o := readObject(rest)
			return o.noun == "" || namesText(o.noun) || catalog != nil && !knownToCatalog(o.noun, catalog)
		}
	}
	return false
}
