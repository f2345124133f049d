package memory

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Whether a message may teach something about its writer is decided by
// what the message is, clause by clause, not by a list of phrases a
// statement must start with: a clause in which the writer speaks of
// themselves (我, 本人, I, my) as its subject and that asks nothing, or a
// standing instruction for later answers (以后…, 下次…, from now on). So
// 「我常驻上海办公室」 and 「我上周申请的 VPN 是 VPN-1001」 are statements like
// 「我在上海办公室」, while 「我还有几天年假」 (a question without a question
// mark) and 「帮我查下工资」 (a request, 我 its object) are not. The model
// then decides what of a statement is worth keeping.

// minStatementRunes is the shortest clause worth a model call.
const minStatementRunes = 4

// questionMarks end or fill a clause that asks: particles, interrogative
// words, and the question mark itself.
var questionMarks = []string{"?", "？", "吗", "呢", "什么", "怎么", "怎样", "如何", "为什么", "几", "多少", "哪", "谁",
	"是否", "能否", "能不能", "可不可以", "可以吗", "有没有", "是不是", "要不要", "多久", "何时"}

// objectFirstPerson are the verbs after which 我 is the object of a
// request (帮我查, 给我发, 告诉我): the clause asks for something.
var objectFirstPerson = []string{"帮我", "给我", "替我", "为我", "让我", "跟我", "和我", "告诉我", "通知我", "提醒我", "发我", "教我", "带我"}

// laterFrames open a standing instruction about later answers.
var laterFrames = []string{"以后", "今后", "往后", "下次", "之后都", "每次", "from now on", "in future", "always"}

// statesSomething reports whether text may tell something about its
// writer worth remembering. The extraction call is skipped otherwise.
func statesSomething(text string) bool {
	for _, c := range clausesOf(text) {
		if isStatement(c) {
			return true
		}
	}
	return false
}

// clausesOf cuts text at sentence and clause punctuation.
func clausesOf(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return strings.ContainsRune("。！!；;，,\n", r)
	})
}

// isStatement reports whether one clause states something about its
// writer or how they want to be answered.
func isStatement(c string) bool {
	c = strings.TrimSpace(c)
	if utf8.RuneCountInString(c) < minStatementRunes || asks(c) {
		return false
	}
	for _, f := range laterFrames {
		if strings.HasPrefix(c, f) {
			return true
		}
	}
	return selfAsSubject(c)
}

// asks reports whether a clause is a question.
func asks(c string) bool {
	for _, q := range questionMarks {
		if strings.Contains(c, q) {
			return true
		}
	}
	return false
}

// selfAsSubject reports whether the writer is a subject of c: a 我 (or 本人)
// not only the object of a request verb, or an English first person.
func selfAsSubject(c string) bool {
	rest := c
	for _, v := range objectFirstPerson {
		rest = strings.ReplaceAll(rest, v, "")
	}
	if strings.Contains(rest, "我") || strings.Contains(rest, "本人") {
		return true
	}
	for _, w := range strings.FieldsFunc(c, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' }) {
		switch w {
		case "i", "i'm", "im", "my", "i've":
			return true
		}
	}
	return false
}

// preferenceTopics are what a preference is about: how to answer.
var preferenceTopics = []string{"回复", "回答", "答复", "称呼", "叫我", "英文", "中文", "英语", "简短", "简洁", "详细", "语气",
	"格式", "表格", "markdown", "reply", "answer", "english", "chinese", "call me", "short", "brief"}

// kindOf is what a note the user asked to keep is: a preference when it
// says how to answer them, a fact otherwise.
func kindOf(text string) Kind {
	t := strings.ToLower(text)
	for _, p := range preferenceTopics {
		if strings.Contains(t, p) {
			return KindPreference
		}
	}
	return KindFact
}

// idLike are identifiers a backend returns for what it did: ticket,
// request and order numbers (INC-1001, VPN-1001, REQ20261201-7).
var idLike = regexp.MustCompile(`\b[A-Z]{2,10}-?[0-9][0-9A-Z-]{2,23}\b`)

// outcomeText is a confirmed write's memory: its date, what the user was
// told, and the identifiers the backend returned (observation) that the
// reply did not repeat (first, so that cutting a long reply keeps them), so that 「我的报修单号是多少」 can be answered from
// it. Personal numbers are never kept (storable refuses what masking
// would change).
func outcomeText(date, reply, observation string) string {
	reply = strings.TrimSpace(reply)
	var ids []string
	for _, id := range idLike.FindAllString(observation, 8) {
		if !strings.Contains(reply, id) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return date + " " + reply
	}
	// Before the reply: a long reply is cut to MaxTextBytes, the ids not.
	return date + "（编号 " + strings.Join(ids, "、") + "）" + reply
}
