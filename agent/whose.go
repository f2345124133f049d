package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/hermes-gw/hermes/skills"
)

// Whose data a reply shows (issue #37). A personal skill (Spec.Personal,
// or a description saying it answers for the caller) answers with the
// verified sender's own records whatever its arguments say, so a question
// about someone else (「小王这个月的考勤」) can only get the asker's data
// under the colleague's name. Hermes decides whose data each call is
// about before it runs, and presents the outcome itself:
//
//   - Every personal skill's definition gets a required subject argument
//     (subjectArg): "self", or the person the user asked about in their
//     words (小王, 老李, 我们经理). The model fills it, because it reads
//     nicknames and titles no word list holds; Hermes removes it before
//     the arguments are checked and the skill runs.
//   - The lexical detector (otherSubject: a surname or a 小/老/阿 with a
//     cue, a title of the asker's) stays as a second signal over the
//     user's text. Either signal saying "someone else" wins: a personal
//     call about someone else is not run, and its observation tells the
//     model why. A noisy model that writes "self" for 老李 is overruled by
//     the text; a nickname the text check misses is caught by the model.
//   - The reply is Hermes's: when someone else was asked about, it starts
//     with Messages.OwnDataOnly (others' data cannot be shown); when a
//     read-only personal result is shown, with Messages.OwnDataLabel
//     naming it as the asker's own, unless the answer already says so
//     (本人) or addresses the asker (你的…, Messages.AddressWords). An
//     answer that still names that person over the caller's records is
//     corrected once and otherwise replaced (verify.go): by the refusal,
//     or, when the request was about the asker too, by the answer's part
//     about the asker alone (whose_together.go); a streamed answer is held
//     until it is clear it needs neither (stream.go).
//
// Why an argument rather than a separate classification call: the model
// decides whose data it wants at the moment it calls, in the same
// request, at no extra model call; and the argument is per call, so a
// request about oneself and a colleague (「我和小王的考勤」) is decided call
// by call. What it cannot catch: a model that writes "self" for a person
// the text check does not recognise either (a bare given name 「建国的考勤」).

// subjectArg is the argument added to personal skills; subjectArgAlt
// when the skill has a parameter of that name already.
const (
	subjectArg    = "subject"
	subjectArgAlt = "data_subject"
	// maxSubjectRunes bounds the model's words for a person, which reach
	// the reply.
	maxSubjectRunes = 16
)

// subjectDescription is the added argument's description: short, as it
// is repeated in every personal skill's definition.
const subjectDescription = `Whose data: "self" for the user's own, else the person they asked about, in their words (小王, 我们经理)`

var subjectSchema, _ = json.Marshal(map[string]string{"type": "string", "description": subjectDescription})

// selfSubjects are the values that mean the caller (or no one), folded.
var selfSubjects = []string{"", "self", "me", "myself", "i", "user", "caller", "the user", "none", "我", "我自己", "自己", "本人",
	"用户", "提问者", "无", "我的"}

// personalMarks in a skill's description say it answers for the caller,
// when the definition does not say so in Spec.Personal.
var personalMarks = []string{"本人", "提问者", "caller", "当前用户"}

// isPersonal reports whether spec answers with the caller's own records.
func isPersonal(spec skills.Spec) bool {
	if spec.Personal != nil {
		return *spec.Personal
	}
	return containsAny(strings.ToLower(spec.Description), personalMarks)
}

// withSubject is params with the subject argument added and required,
// and the argument's name; params unchanged and "" when params is not an
// object schema. Keys are marshalled sorted, so the result is the same
// bytes every turn.
func withSubject(params json.RawMessage) (json.RawMessage, string) {
	var top map[string]json.RawMessage
	if json.Unmarshal(params, &top) != nil || top == nil {
		return params, ""
	}
	props := map[string]json.RawMessage{}
	if p, ok := top["properties"]; ok && json.Unmarshal(p, &props) != nil {
		return params, ""
	}
	name := subjectArg
	if _, taken := props[name]; taken {
		name = subjectArgAlt
		if _, taken := props[name]; taken {
			return params, ""
		}
	}
	var required []string
	if r, ok := top["required"]; ok && json.Unmarshal(r, &required) != nil {
		return params, ""
	}
	props[name] = subjectSchema
	required = append(required, name)
	top["properties"], _ = json.Marshal(props)
	top["required"], _ = json.Marshal(required)
	if _, ok := top["type"]; !ok {
		top["type"] = json.RawMessage(`"object"`)
	}
	out, err := json.Marshal(top)
	if err != nil {
		return params, ""
	}
	return out, name
}

// takeSubject removes the subject argument from args: the arguments the
// skill gets, and what the model wrote for it (stated reports whether it
// wrote anything). Arguments that are not a JSON object are returned as
// they are, for validation to explain.
func takeSubject(args, name string) (rest, subject string, stated bool) {
	var obj map[string]json.RawMessage
	if name == "" || json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return args, "", false
	}
	raw, ok := obj[name]
	if !ok {
		return args, "", false
	}
	delete(obj, name)
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return args, "", false
	}
	return string(b), s, true
}

// otherPerson is the person a stated subject names, "" for the caller (or
// no one). Control characters go and the words are cut: they may reach
// the reply.
func otherPerson(stated string) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '"' || r == '\'' {
			return -1
		}
		return r
	}, strings.TrimSpace(stated))
	if slices.Contains(selfSubjects, strings.ToLower(s)) {
		return ""
	}
	if r := []rune(s); len(r) > maxSubjectRunes {
		s = string(r[:maxSubjectRunes])
	}
	return s
}

// aboutOther decides whose data a call of a personal skill is about: ""
// for the caller, else who (the user's words when the text check found
// them, else the model's). When the request asks about the asker too
// (「我和小王的考勤」) the text cannot tell the calls apart, so the model's
// subject decides each call: the asker's part runs, the colleague's does
// not.
func (r *run) aboutOther(stated string) string {
	if r.subject != "" && !r.selfToo {
		return r.subject
	}
	return otherPerson(stated)
}

// setSubject sets who the request is about besides the asker, by the
// text check, and whether it asks about the asker too: then the person
// joined to the asker is someone else even when no list knows them
// (companion, whose_together.go).
func (r *run) setSubject(goal string) {
	r.subject = otherSubject(goal)
	if asksSelfToo(goal) && r.subject == "" {
		_, m := r.catalog()
		r.subject = companion(goal, m)
	}
	r.selfToo = r.subject != "" && asksSelfToo(goal)
}

// selfAlongside finds the asker joined to someone else: 我和小王, 我跟老李,
// 小王和我, 我们俩, 我的和他的.
// (我还有 is "I still have", 我同事 "my colleague", 跟我说 a report.)
var selfAlongside = regexp.MustCompile(`我(和|跟|与|以及)|(和|跟|与|以及)我(的|们俩|俩|这|今|上|本|[，,]|$)|我们俩|咱俩|咱们俩|` +
	`我的.{0,12}(和|跟|与|还有|以及)`)

// asksSelfToo: the request asks about the asker alongside another person.
func asksSelfToo(goal string) bool { return selfAlongside.MatchString(goal) }

// othersNamed are the people other than the caller whose data the reply
// says it cannot show: those a call was refused for, and the one a
// request about the asker and them names, even when no call was made
// for them.
func (r *run) othersNamed() []string {
	if r.selfToo && r.subject != "" && !slices.Contains(r.others, r.subject) {
		return append(slices.Clone(r.others), r.subject)
	}
	return r.others
}

// refuseOther marks a personal call about someone else as not run.
func (r *run) refuseOther(c *callResult, who string) {
	c.runnable = false
	c.obs.text = fmt.Sprintf("not run: %s answers with the caller's own records only (the verified sender), so it cannot show %s's data, "+
		"and Hermes does not run it for anyone else. Tell the user plainly that only their own data can be shown; "+
		"never present any record as %s's.", c.entry.spec.Name, who, who)
	c.deltas = append(c.deltas, "not run: about someone else ("+who+")")
	if !slices.Contains(r.others, who) {
		r.others = append(r.others, who)
	}
}

// noteSubject books a skill's answer for the subject check, and tells the
// model whose record it is when the user asked about someone else.
func (r *run) noteSubject(c *callResult) {
	if !c.ran {
		return
	}
	if c.entry.personal && c.entry.spec.ReadOnly { // a write reports what was done for the caller, not data
		name := displayName(c.entry.spec)
		if !slices.Contains(r.ownShown, name) {
			r.ownShown = append(r.ownShown, name)
		}
	}
	if r.subject != "" && (strings.Contains(string(c.args), r.subject) || strings.Contains(c.obs.text, r.subject)) {
		r.answeredSubject = true
		return
	}
	r.answered++
	if who := r.named(); who != "" {
		c.obs.text += subjectNote(who)
	}
}

// named is the person other than the caller the request is about, by
// either signal, "" when none.
func (r *run) named() string {
	if r.subject != "" {
		return r.subject
	}
	if len(r.others) > 0 {
		return r.others[0]
	}
	return ""
}

// whoseUnsettled reports whether an answer written now may present the
// caller's data as someone else's, so it is not streamed before it is
// checked: someone else was asked about, by either signal, and a call
// about them was refused or the caller's records came back.
func (r *run) whoseUnsettled() bool {
	return len(r.others) > 0 || (r.subject != "" && r.answered > 0)
}

// callerData reports whether the results of the run are the caller's own:
// a skill answered, and none was asked about the subject by name or
// answered about them (a directory look-up of 李娜 is about 李娜).
func (r *run) callerData() bool {
	return r.answered > 0 && !r.answeredSubject
}

// subjectNote is added to the observation of a skill that answered
// without being asked about the person the user named.
func subjectNote(subject string) string {
	return fmt.Sprintf("\nnote: this is the caller's own record (skills answer for the verified sender only), not %s's.", subject)
}

// presentWhose is the reply as Hermes presents it: the sentence that
// others' data cannot be shown when someone else was asked about, and
// the label of the caller's own data when a personal result is shown.
func (r *run) presentWhose(reply string) string {
	m := r.opts.Messages
	var head []string
	if others := r.othersNamed(); len(others) > 0 {
		refusal := fmt.Sprintf(m.OwnDataOnly, strings.Join(others, m.ListSep))
		if len(r.ownShown) == 0 && r.answered == 0 {
			// Nothing was shown: the model's words could only repeat
			// the refusal or describe records no skill returned.
			return refusal
		}
		if !strings.Contains(reply, refusal) {
			head = append(head, refusal)
		}
	}
	if r.needsOwnLabel(reply) {
		head = append(head, fmt.Sprintf(m.OwnDataLabel, strings.Join(r.ownShown, m.ListSep)))
	}
	if len(head) == 0 {
		return reply
	}
	return strings.Join(head, "\n") + "\n" + reply
}

// needsOwnLabel reports whether text shows personal results without
// saying they are the asker's: neither an own-data word (本人) nor an
// address of the asker (你的, 您) is in it. An answer naming someone else
// over them was corrected or replaced before (verify.go).
func (r *run) needsOwnLabel(text string) bool {
	m := r.opts.Messages
	return len(r.ownShown) > 0 && !containsAny(text, m.OwnDataWords) && !containsAny(text, m.AddressWords)
}

// Who a request is about, by its words: the second signal. A person is
// found the way employees name them: a surname with a title (李经理, 王总),
// a title of the asker's (我老板, 我们经理), a full name (王芳, 张伟) or a
// nickname (小王, 老李, 阿强), each followed by what is asked of them (的,
// 还有, 这个月 …): 「王经理说我的报销被退回了」 is about the asker.
var (
	titles     = []string{"经理", "主管", "领导", "老板", "总监", "组长", "部长", "主任", "老师", "同事", "总"}
	surnames   = "王李张刘陈杨赵黄吴徐孙胡朱林郭罗梁宋郑韩唐冯董萧程曹袁邓傅沈彭吕苏卢蒋蔡贾丁魏薛叶阎潘杜戴钟汪姜范姚谭廖邹熊陆郝孔崔毛邱秦顾侯邵孟"
	personCues = []string{"的", "还有", "还剩", "这个月", "上个月", "本月", "今年", "去年", "这周", "上周", "谁"}
	// askWords are never part of a name: 徐姐谁的 asks who of two.
	askWords     = "谁啥哪"
	personPrefix = []string{"看看", "看下", "看一下", "查查", "查下", "查一下", "帮我", "问下", "问问", "部", "组", "替", "给",
		"和", "跟", "与"} // 我和小王的
	// nickPrefixes make a nickname of any one character: 小王, 老李, 阿强.
	nickPrefixes = "小老阿"
	// notNicknames start like a nickname and are words.
	notNicknames  = []string{"小时", "小区", "小组", "小票", "小额", "小程序", "老家", "老婆", "老公", "阿里"}
	maxNameRunes  = 3 // surname and given name
	subjectMaxLen = 64
)

// otherSubject is the person other than the caller that text asks about,
// "" when none.
func otherSubject(text string) string {
	if p := peopleIn(text, 1); len(p) > 0 {
		return p[0]
	}
	return ""
}

// maxPeople bounds the people peopleIn collects from one text.
const maxPeople = 8

// peopleIn are the people text names, at most limit, in order, from its
// first subjectMaxLen*4 runes (who a request is about is said at its
// start).
func peopleIn(text string, limit int) []string {
	r := []rune(text)
	if len(r) > subjectMaxLen*4 {
		r = r[:subjectMaxLen*4]
	}
	var out []string
	for i := 0; i < len(r) && len(out) < limit; i++ {
		if !boundaryBefore(r[:i]) {
			continue
		}
		if s := personAt(r[i:]); s != "" {
			out = append(out, s)
			i += len([]rune(s)) - 1
		}
	}
	return out
}

// relabeled is the person an answer presents the caller's own records
// as, "" when none: the skills answered for the caller only, and the
// answer names the person the request is about (by either signal) or,
// third signal, a person the request names too, followed by what is said
// of them (小赵这个月的记录 for 「实习生小赵的门禁卡」, which the text check
// does not find and a noisy model called "self") — without saying the
// data is the caller's own.
func (r *run) relabeled(answer string) string {
	if !r.callerData() || containsAny(answer, r.opts.Messages.OwnDataWords) {
		return ""
	}
	if who := r.named(); who != "" {
		if namedOutsideRefusal(answer, who, r.opts.Messages.RefusalWords) {
			return who
		}
		return ""
	}
	goal := r.goalText()
	for _, p := range peopleIn(answer, maxPeople) {
		if strings.Contains(goal, p) {
			return p
		}
	}
	_, m := r.catalog()
	return echoedHolder(answer, goal, m)
}

// Whose record an answer states, when no word list knows the person
// (胖哥, 我师父, 钱总监 and a model that wrote "self" for them): the words
// right before what is said of a record (这个月, 的) in the answer, which
// the request also puts before a record (胖哥这个月打卡, 钱总监的绩效), are
// its holder. They are no one when they are the asker (我, 你, 本人), a
// time (本月) or a word of the catalog's skills (考勤这个月正常: the
// record itself).
const (
	minHolderRunes = 2
	maxHolderRunes = 4
)

// holderCues follow the holder of a record.
var holderCues = []string{"的", "这个月", "上个月", "本月", "今年", "去年", "这周", "上周", "最近"}

// notHolders are runes of the asker or of a time, never in a holder.
const notHolders = "我你您本自月年周天日时期"

// echoedHolder is the holder of a record the answer states that the
// request names as one too, "" when none.
func echoedHolder(answer, goal string, catalog *matcher) string {
	for _, cue := range holderCues {
		for rest := answer; ; {
			i := strings.Index(rest, cue)
			if i < 0 {
				break
			}
			before := []rune(rest[:i])
			rest = rest[i+len(cue):]
			if w := latinName(before); w != "" && strings.Contains(goal, w) && !latinKnown(w, catalog) {
				return w // 运营部的Lily请了几天假: a Latin name is a name wherever the request has it
			}
			for n := min(maxHolderRunes, len(before)); n >= minHolderRunes; n-- {
				h := before[len(before)-n:]
				if !allHan(h) || strings.ContainsAny(string(h), notHolders) {
					continue
				}
				if holdsInRequest(string(h), goal, catalog) && (catalog == nil || !knownToCatalog(string(h), catalog)) {
					return string(h)
				}
			}
		}
	}
	return ""
}

// holdsInRequest: the request puts h before a record: a cue (h的,
// h这个月) or a word of the catalog's skills right after it (眼镜哥社保).
func holdsInRequest(h, goal string, catalog *matcher) bool {
	for _, cue := range holderCues {
		if strings.Contains(goal, h+cue) {
			return true
		}
	}
	for rest := goal; catalog != nil; {
		_, after, found := strings.Cut(rest, h)
		if !found {
			return false
		}
		if r := []rune(after); len(r) >= 2 && allHan(r[:2]) {
			if _, known := catalog.idf[string(r[:2])]; known {
				return true
			}
		}
		rest = after
	}
	return false
}

// latinName is the run of at least two Latin letters that ends r (Lily
// before 这个月), "" when none.
func latinName(r []rune) string {
	i := len(r)
	for i > 0 && (r[i-1] >= 'a' && r[i-1] <= 'z' || r[i-1] >= 'A' && r[i-1] <= 'Z') {
		i--
	}
	if len(r)-i < 2 {
		return ""
	}
	return string(r[i:])
}

// latinKnown: a Latin word the catalog's skills use (VPN, KPI, OA) is a
// thing, not a person.
func latinKnown(w string, catalog *matcher) bool {
	if catalog == nil {
		return false
	}
	_, known := catalog.idf[matchNorm(w)]
	return known
}

// answerSentences cut an answer where a statement about one person ends.
var answerSentences = regexp.MustCompile(`[。！？!?；;\n]`)

// namedOutsideRefusal: who is named in a sentence of answer that does not
// say their data cannot be shown (refusal: 无法查看): 「小王的考勤我无法查
// 看」 names 小王 honestly, 「小王迟到 0 次」 does not.
func namedOutsideRefusal(answer, who string, refusal []string) bool {
	forms := nameForms(who)
	for _, s := range answerSentences.Split(answer, -1) {
		if containsAny(s, forms) && !containsAny(s, refusal) {
			return true
		}
	}
	return false
}

// nameForms are who and the shorter names an answer may call them by:
// the tails of a description of at least two Han runes (楼下前台妹子 →
// 前台妹子, 妹子), as the head of a Chinese noun phrase comes last.
func nameForms(who string) []string {
	forms := []string{who}
	r := []rune(who)
	for i := 1; i+2 <= len(r); i++ {
		if allHan(r[i:]) {
			forms = append(forms, string(r[i:]))
		}
	}
	return forms
}

// personAt is the person named at the start of r, "" when none.
func personAt(r []rune) string {
	rest := string(r)
	if strings.HasPrefix(rest, "我") { // 我老板的, 我们经理这个月; not 我们组长让我查
		after := strings.TrimPrefix(strings.TrimPrefix(rest, "我"), "们")
		for _, t := range titles {
			if t != "总" && t != "同事" && strings.HasPrefix(after, t) && hasAnyPrefix(after[len(t):], personCues) {
				return t
			}
		}
		return ""
	}
	if len(r) >= 3 && strings.ContainsRune(nickPrefixes, r[0]) &&
		!slices.ContainsFunc(notNicknames, func(w string) bool { return strings.HasPrefix(rest, w) }) {
		for n := 3; n >= 2; n-- { // 小王, 老板娘
			if len(r) > n && allHan(r[1:n]) && hasAnyPrefix(string(r[n:]), personCues) {
				return string(r[:n])
			}
		}
	}
	if !strings.ContainsRune(surnames, r[0]) {
		return ""
	}
	after := string(r[1:])
	for _, t := range titles {
		// Asked about, not reporting: 王经理的报销, not 王经理说我的报销.
		if strings.HasPrefix(after, t) && t != "同事" && hasAnyPrefix(after[len(t):], personCues) {
			return string(r[0]) + t
		}
	}
	for n := maxNameRunes; n >= 2; n-- {
		if len(r) <= n || !allHan(r[:n]) || strings.ContainsAny(string(r[:n]), askWords) {
			continue
		}
		if hasAnyPrefix(string(r[n:]), personCues) {
			return string(r[:n])
		}
	}
	return ""
}

// boundaryBefore: a name may start here (the start, after punctuation or
// a space, or after a verb of asking such as 看看).
func boundaryBefore(before []rune) bool {
	if len(before) == 0 || !unicode.Is(unicode.Han, before[len(before)-1]) {
		return true
	}
	s := string(before)
	for _, p := range personPrefix {
		if strings.HasSuffix(s, p) {
			return true
		}
	}
	return false
}

func allHan(r []rune) bool {
	for _, c := range r {
		if !unicode.Is(unicode.Han, c) {
			return false
		}
	}
	return true
}
