package agent

import (
	"strings"
	"unicode"
)

// Chit-chat: a message that asks for no company data — a greeting, thanks,
// a plan or a birthday wish to write, a word to explain or translate — is
// offered no skill at all, so no skill can run for it. It may still
// mention a company word (「提到年会」, 「预算5000」, 「什么是社保」), which
// matching alone would take for a request; a model shown the 预算 skill for
// 「帮我写个团建方案，预算5000」 is tempted to call it.
//
// So what a message asks for is decided by its shape, not by the topic
// words in it (issue #37): is the thing asked for a text, an idea, an
// explanation or an opinion to be produced, or a record or state of the
// company's systems to be read or changed?
//
//   - the head clause (the first with an act, after greetings and
//     帮我/请/麻烦; statements before it are its context, requests to the
//     assistant before it make the message a request) says the act:
//     transforming the user's own text given with it (翻译, 润色 with a
//     colon or 这句话); explaining (解释, 什么是, …有什么区别); composing:
//     a producing verb whose object is something to produce — a kind of
//     text by its head noun (方案, 欢迎词), or a noun no skill of the
//     catalog uses that a writing verb names or a making verb counts
//     (写请假说明, 出几道考题; chitchat_object.go reads the noun phrase),
//     not a record the catalog holds (证明, 报修单, 会议室); an idea verb
//     (策划, 构思) whatever it names; or advising: an opinion asked for
//     (爬山还是烧烤好, 怎么跟领导开口, 分析一下 on no record);
//   - every other clause is a parameter of that act (预算5000, 提到年会,
//     人均200以内) unless it is a request of its own: it starts with a
//     request (帮我, 请, 然后订 …) whose act is not one of the above;
//   - a clause asking for a record makes the message a request
//     (asksRecord): a look-up (查一下) or the company's rules anywhere;
//     the asker's own records (我的, 我这个月) unless the clause states
//     them as a fact (「我的预算是5000」); a record's state or an
//     application (多少, 进度, 申请) except inside the text to compose
//     (「写一封申请调岗的邮件」).
//
// The test stays conservative, because hiding the skills from a real
// request is worse than offering them to small talk: when the head is no
// such act, or a record is asked for, skills are offered. Text after a
// colon of a writing request is the material to work on, not a request
// (「翻译成英文：我下周请假」). Hermes enforces the outcome: chit-chat is
// offered no skill and no index, so a call the model makes anyway names
// no tool on offer and does not run.

// maxGreetingRunes is the longest message taken for a bare greeting.
const maxGreetingRunes = 12

var (
	// greetings, alone on a message, ask for nothing.
	greetings = []string{"你好", "您好", "在吗", "在不在", "谢谢", "多谢", "感谢", "辛苦了", "辛苦", "早上好", "下午好", "晚上好",
		"晚安", "再见", "拜拜", "好的", "收到", "哈哈", "嗨", "hello", "hi", "thanks", "ok"}
	// politePrefixes come before the act: 帮我写, 麻烦你解释.
	politePrefixes = []string{"帮我", "帮忙", "帮", "请你", "请", "麻烦你", "麻烦", "能不能", "能否", "可不可以", "可以", "给我",
		"替我", "你", "您", "我想", "我要", "再", "然后", "顺便", "另外", "并且", "同时", "还有", "也"}
	// requestOpeners ask the assistant for something: a clause opening so
	// before the act is a request, not context.
	requestOpeners = []string{"帮我", "帮忙", "帮", "请", "麻烦", "能不能", "能否", "可不可以", "给我", "替我"}
	// transformVerbs work on the user's own text (after a colon, quoted,
	// or 这句话): no data is asked for. Without such material 「改写成
	// b.md」 may be an operation on a file.
	transformVerbs = []string{"翻译", "润色", "改写", "缩写", "扩写", "校对", "改一下", "改改", "改得", "改成", "改为", "翻成", "译成",
		"转成", "换成", "说得", "写得", "弄得"}
	// materialMarks show the user's text to transform is in the message.
	materialMarks = []string{"这句", "这段", "下面这段", "以下", "「", "“", "‘", "『", "\"", "'"}
	// explainMarkers ask what something is or means.
	explainMarkers = []string{"解释", "讲讲", "讲解", "说说", "介绍一下", "科普", "什么是", "啥是", "什么叫", "啥叫", "何谓", "是什么意思", "什么意思",
		"有什么区别", "有啥区别", "什么区别", "的区别",
		"有什么不同", "有啥不同", "有什么不一样", "有啥不一样", "差在哪", "区别在哪", "不同在哪", "差别",
		"英文怎么说", "英语怎么说", "怎么翻译"}
	// composeVerbs produce something at the head of a clause.
	composeVerbs = []string{"写", "拟", "起草", "编", "撰写", "求", "想", "出", "做", "设计", "列", "起", "取", "准备", "讲", "来",
		"整理", "推荐", "给"}
	// benefactiveVerbs may follow 给新同事: the compose verbs that are not
	// also common in a noun phrase (来, 出, 做: 新来的).
	benefactiveVerbs = []string{"想", "讲", "列", "准备", "设计", "起", "取"}
	// writingVerbs produce a text from what follows them.
	writingVerbs = []string{"写", "拟", "起草", "编", "撰写"}
	// askingVerbs ask for what they name: 求安慰, 求个点子; what no skill
	// holds can only be produced.
	askingVerbs = []string{"求"}
	// makingVerbs make a new thing of what they count: 出几道考题, 做一份
	// 议程; 给, 来, 推荐 only hand over (给个五星 is a rating).
	makingVerbs = []string{"出", "做", "列", "准备", "整理", "想", "起", "取", "推荐"}
	// ideaVerbs produce a plan or ideas, whatever the object names
	// (策划一个团建活动, 想个开场小游戏).
	ideaVerbs = []string{"策划", "构思", "规划", "设计", "出主意", "出点子", "头脑风暴", "想个", "想一个", "想几个", "想些", "想一些", "想想",
		"想一想"}
	// writtenThings end the object of a composing act that produces text,
	// not a record: 团建方案, 请假邮件, 年会节目的点子.
	writtenThings = []string{"方案", "文案", "邮件", "通知", "祝福", "祝福语", "致辞", "发言稿", "演讲稿", "讲稿", "标题", "口号",
		"段子", "笑话", "诗", "故事", "总结", "大纲", "提纲", "模板", "点子", "主意", "建议", "思路", "名字", "贺词", "感谢信",
		"邀请函", "文章", "短文", "开场白", "主持词", "串词", "话术", "措辞", "攻略", "清单", "计划", "理由", "作文", "歌词", "对联",
		// the suffixes of kinds of text: 欢迎词, 演讲稿, 宣传语, 感谢信, 推文, 儿歌
		"词", "稿", "语", "信", "文", "歌"}
	// Markers of a record asked for (asksRecord): the asker's own
	// records, a look-up, the company's rules, a record's state.
	personalMarkers = []string{"我的", "我还", "我今年", "我上", "我这", "我本月"}
	lookupMarkers   = []string{"帮我查", "查一下", "查下", "查询", "帮我看", "看看我"}
	companyMarkers  = []string{"公司的", "咱们公司", "我们公司", "我司", "公司规定", "能报", "怎么报"}
	recordMarkers   = []string{"多少", "几天", "申请", "办理", "提交", "进度", "状态", "余额"}
	// questionMarks make a clause a question, not a statement.
	questionMarks = []string{"吗", "呢", "么", "多少", "几", "没", "什么", "啥", "哪", "怎", "谁", "是否", "是不是", "?", "？"}
	// statementCues make a clause without a question a statement of fact
	// (我的预算是5000, 我这个月加班好多, 我的报销批了).
	statementCues = []string{"是", "有", "了", "太", "很", "好多", "挺", "特别", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	// wantMarks make a statement the reason of a request: 我的门禁卡丢了要
	// 补办.
	wantMarks = []string{"要", "想", "需要", "得", "请", "办", "补", "帮"}
	// trailingParticles end a clause without changing its object.
	trailingParticles = "吧呢啊呀吗嘛哦哈～~ "
)

// chitChatSeparators cut a message into clauses for the structure test.
var chitChatSeparators = "，,。；;！!？?\n"

// isChitChat reports whether text asks for no company data, without a
// catalog to tell records from texts.
func isChitChat(text string) bool { return chitChat(text, nil) }

// chitChat reports whether text asks for no company data. catalog, when
// not nil, tells an object the catalog holds (报销单, 在职证明) from a text
// to write (请假说明, 注意事项): the object of a writing verb that is no
// word of any skill is a text.
func chitChat(text string, catalog *matcher) bool { return chitChatOf(text, catalog).chat }

// chitChatVerdict is what a message asks for, by its shape.
type chitChatVerdict struct {
	chat bool // no company data
	// asks: the chit-chat asks for an answer (how to, why, what is: an
	// explanation or advice) rather than a text, ideas or a greeting:
	// such a question may be one the company's documents answer
	// (skills.Spec.Documents).
	asks bool
	// stated: it only states something (chitchat_statement.go); after a
	// request, that is the request's detail (你在哪层？我在三楼).
	stated bool
}

// chitChatOf decides what text asks for.
func chitChatOf(text string, catalog *matcher) chitChatVerdict {
	folded := matchNorm(strings.TrimSpace(text))
	if folded == "" {
		return chitChatVerdict{}
	}
	if isGreeting(folded) {
		return chitChatVerdict{chat: true}
	}
	asked, material := folded, containsAny(folded, materialMarks)
	if i := strings.IndexAny(folded, "：:"); i >= 0 && strings.TrimSpace(folded[i+1:]) != "" {
		material = true
		if actOf(folded[:i], true, catalog) != actRequest {
			asked = folded[:i] // the material after the colon is not a request
		}
	}
	parts := strings.FieldsFunc(asked, func(r rune) bool { return strings.ContainsRune(chitChatSeparators, r) })
	head, solves, answer := false, false, false
	for _, p := range parts {
		a := actOf(p, material, catalog)
		switch {
		case isGreeting(p):
		case asksRecord(p, a):
			return chitChatVerdict{}
		case !head && a != actRequest:
			head = true
			answer = a == actAdvise || a == actExplain
			solves = answer || hasAnyPrefix(afterBenefactive(stripPolite(p)), ideaVerbs)
		case !head && hasAnyPrefix(strings.TrimSpace(p), requestOpeners):
			return chitChatVerdict{} // asks the assistant for something else first
		case !head:
			// A statement before the act is its context
			// (「我要在周会上发言，帮我拟个开场白」).
		case startsRequest(p) && a == actRequest:
			return chitChatVerdict{} // a request of its own after the act
		}
	}
	if !head {
		// Nothing asked: a statement about the asker, how they want to
		// be answered or how they feel (chitchat_statement.go) is
		// chit-chat.
		stated := statesOnly(parts, catalog)
		return chitChatVerdict{chat: stated, stated: stated}
	}
	// A way asked out of a problem with something the company's systems
	// hold (「帮我想想办法，VPN密码忘了」) is a request for the skill that
	// mends it; one with a meeting gone quiet is advice.
	chat := !(solves && problemWithRecord(parts, catalog))
	return chitChatVerdict{chat: chat, asks: chat && answer}
}

// problemMarks say something went wrong.
var problemMarks = []string{"坏", "丢", "忘", "锁", "不了", "不上", "不到", "打不开", "过期", "失败", "出错", "异常", "报错"}

// problemWithRecord: a clause tells of a problem (problemMarks) and names
// something the catalog's skills use.
func problemWithRecord(parts []string, catalog *matcher) bool {
	if catalog == nil {
		return false
	}
	for _, p := range parts {
		if !containsAny(p, problemMarks) {
			continue
		}
		for t := range terms(p) {
			if _, known := catalog.idf[t]; known && len([]rune(t)) > 1 {
				return true
			}
		}
	}
	return false
}

// asksRecord: the clause, whose act is a, asks for a record or the
// company's rules. A look-up or the company's rules always do. The
// asker's own records do unless the clause states them (「我的预算是
// 5000」 gives a figure, it asks for none). A record's state or an
// application asked about does, except inside a text to compose: 「写一封
// 申请调岗的邮件」 is about an application, it files none.
func asksRecord(clause string, a act) bool {
	c := stripPolite(clause)
	switch {
	case containsAny(c, lookupMarkers) || containsAny(c, companyMarkers):
		return true
	case statesFact(c):
		return false
	case containsAny(c, personalMarkers):
		return true
	}
	if a == actCompose {
		// Only a second verb joined to the text's (写…并提交申请) asks.
		c = afterConnective(c)
	}
	return containsAny(c, recordMarkers)
}

// innerConnectives join a second act to the first inside one clause.
var innerConnectives = []string{"并且", "并", "然后", "顺便", "同时", "再", "还要"}

// afterConnective is c after its first inner connective, "" when none.
func afterConnective(c string) string {
	first := -1
	for _, w := range innerConnectives {
		if i := strings.Index(c, w); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first < 0 {
		return ""
	}
	return c[first:]
}

// statesFact: the clause tells something rather than asks it: no
// question form, no want, and a figure or a predicate of fact.
func statesFact(c string) bool {
	return !containsAny(c, questionMarks) && !containsAny(c, wantMarks) && containsAny(c, statementCues)
}

// act is what a clause asks for.
type act uint8

const (
	actRequest act = iota // anything else: skills are offered
	actTransform
	actExplain
	actCompose
	actAdvise
)

// actOf is the act of a clause by its structure; material says the
// message carries text of the user's to work on.
func actOf(clause string, material bool, catalog *matcher) act {
	c := stripPolite(clause)
	switch {
	case material && containsAny(c, transformVerbs):
		return actTransform
	case containsAny(c, explainMarkers) || definitionAsked(c):
		return actExplain
	case composes(c, catalog):
		return actCompose
	case advises(c, catalog):
		return actAdvise
	}
	return actRequest
}

// definitionAsks end a question asking what something is or how it
// goes.
var definitionAsks = []string{"是啥", "是什么", "是啥意思", "是什么东西", "是怎样的", "是怎么样的", "是什么样的"}

// definitionAsked: the clause asks what a thing is (360评估是啥) or how
// it goes (扣款顺序是怎么样的), not what a person's thing is (张伟的邮箱是
// 什么: a look-up) nor how this month's is (这个月考勤是怎样的).
func definitionAsked(c string) bool {
	c = strings.TrimRight(c, trailingParticles)
	return hasAnySuffix(c, definitionAsks) && otherSubject(c) == "" && !deicticTimes.MatchString(c)
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

// composes: a producing verb at the head (after a benefactive 给新同事,
// 为年会) whose object is something to produce (chitchat_object.go), or
// such an object counted without a verb (几个团建点子). An idea verb
// (策划, 构思) produces a plan whatever its object names.
func composes(c string, catalog *matcher) bool {
	c = afterBenefactive(c)
	if verb, rest, ok := cutLongestPrefix(c, ideaVerbs); ok {
		// 想想办法 asks for a way out of the user's problem, which a
		// skill may be (帮我想想办法把笔记本换了): not an idea to produce.
		return !hasAnyPrefix(strings.TrimPrefix(rest, "一下"), wayWords) || verb == ""
	}
	if verb, rest, ok := cutLongestPrefix(c, composeVerbs); ok {
		return producesText(readObject(rest), verbKindOf(verb), catalog)
	}
	if o := readObject(c); o.counted {
		return producesText(o, givingVerb, catalog)
	}
	return unknownVerbMakesText(c, catalog)
}

// wayWords are a way out of a problem, after an idea verb.
var wayWords = []string{"办法", "法子", "辙"}

// cutLongestPrefix cuts the longest of prefixes off s (起草 before 起).
func cutLongestPrefix(s string, prefixes []string) (prefix, rest string, ok bool) {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) && len(p) > len(prefix) {
			prefix, ok = p, true
		}
	}
	return prefix, strings.TrimPrefix(s, prefix), ok
}

// afterBenefactive is c from its compose verb when c opens with whom the
// text is for (给新同事写, 为年会写, 替我们组写), else c.
func afterBenefactive(c string) string {
	if !hasAnyPrefix(c, []string{"给", "为", "替"}) {
		return c
	}
	r := []rune(c)
	for i := 2; i < len(r) && i <= maxBenefactiveRunes; i++ {
		if rest := string(r[i:]); hasAnyPrefix(rest, benefactiveVerbs) || hasAnyPrefix(rest, writingVerbs) || hasAnyPrefix(rest, ideaVerbs) {
			return rest
		}
	}
	return c
}

// maxBenefactiveRunes bounds 给新来的几位同事 before the verb.
const maxBenefactiveRunes = 10

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// stripPolite removes the politeness and connectives before the act.
func stripPolite(c string) string {
	c = strings.TrimSpace(c)
	for changed := true; changed; {
		changed = false
		for _, p := range politePrefixes {
			// 给我们部门 is whom the text is for, not politeness.
			if rest, ok := strings.CutPrefix(c, p); ok && rest != "" && !strings.HasPrefix(rest, "们") {
				c, changed = strings.TrimSpace(rest), true
			}
		}
	}
	return c
}

// startsRequest: a later clause that opens like a request of its own
// (帮我订…, 然后交…) rather than a parameter of the act (预算5000).
func startsRequest(c string) bool {
	c = strings.TrimSpace(c)
	return stripPolite(c) != c
}

// isGreeting: short, and nothing left once greetings and punctuation go.
func isGreeting(folded string) bool {
	if len([]rune(folded)) > maxGreetingRunes {
		return false
	}
	rest := folded
	for _, g := range greetings {
		rest = strings.ReplaceAll(rest, g, "")
	}
	rest = strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) || unicode.IsSpace(r) || unicode.IsSymbol(r) || strings.ContainsRune("啊呀呢吧哦嗯了你", r) {
			return -1
		}
		return r
	}, rest)
	return rest == "" && rest != folded
}
