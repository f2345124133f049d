package agent

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
)

// Answers checked against what ran (seed 004 §4.1: every result must come
// from a real tool). Before an answer is sent it is checked for three
// things a model says that the run contradicts:
//
//   - it claims an action (已提交, 已为你重置 …) and no write ran in this run;
//   - it cites a tool result (根据系统查询结果 …) and no skill answered;
//   - the user asked about someone else (「李经理这个月的考勤」), the skills
//     answered with the caller's own record (they answer for the verified
//     sender only), and the answer names that person without saying the
//     data is the caller's own.
//
// The model is told once what is wrong and answers again, free of the
// step budget; if the new answer is wrong too, the user gets the honest
// sentence of Messages instead (NotPerformed, NoResult, OwnDataOnly). The
// words recognised are Messages' (ClaimVerbs, CitePhrases, OwnDataWords),
// so a deployment in another language brings its own.

// answerIssue is what is wrong with an answer: the note for the model
// and the honest reply if the model does not correct itself.
type answerIssue struct {
	kind       string // for the trace
	correction string
	fallback   string
}

// checkAnswer checks r.final. It reports whether the loop goes on (the
// model was asked to correct itself) and whether r.final was replaced by
// an honest sentence.
func (r *run) checkAnswer() (again, replaced bool) {
	issue, bad := r.answerIssue(r.final)
	if !bad {
		return false, false
	}
	if !r.corrected {
		r.corrected, r.freeNext = true, true
		r.note("answer contradicts the run (%s); asked once to correct it", issue.kind)
		r.appendMsg(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: issue.correction}, msgOther, "")
		return true, false
	}
	r.note("answer contradicts the run (%s) after the correction; replaced by the honest answer", issue.kind)
	r.final = issue.fallback
	return false, true
}

// answerIssue finds the first thing wrong with text, if any.
func (r *run) answerIssue(text string) (answerIssue, bool) {
	m := r.opts.Messages
	wrote := len(r.writes) > 0 || len(r.result.AsyncTasks) > 0
	switch {
	case !wrote && claimsAction(text, m.ClaimVerbs):
		return answerIssue{kind: "claimed action",
			correction: "Check your answer: no tool call performed that action in this run, so nothing was submitted, reset, booked or cancelled. " +
				"Correct the answer: say plainly what was not done and what is needed, or call the tool that does it.",
			fallback: m.NotPerformed}, true
	case len(r.progress.done) == 0 && citesResult(text, m.CitePhrases):
		return answerIssue{kind: "cited result",
			correction: "Check your answer: no tool returned a result in this run. Do not cite one; answer without it, or call the tool that has it.",
			fallback:   m.NoResult}, true
	case r.subject != "" && r.callerData() && strings.Contains(text, r.subject) && !containsAny(text, m.OwnDataWords):
		return answerIssue{kind: "caller's data relabeled",
			correction: fmt.Sprintf("Check your answer: the skills answer for the caller only, so the results are the caller's own records, not %s's. "+
				"Rewrite it: say you can only show the caller's own data, and present it as the caller's, never as %s's.", r.subject, r.subject),
			fallback: fmt.Sprintf(m.OwnDataOnly, r.subject)}, true
	}
	return answerIssue{}, false
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

var claimCache sync.Map // verbs joined → *regexp.Regexp

// agents are who an action is done for, after 已: 已为你提交.
const agents = `为你|为您|帮你|帮您|替你|替您|给你|给您`

// claimsAction reports whether text says an action was done: 已 (or
// 已经), at the start of a sentence or after 我, or followed by 为你 and the
// like, then one of verbs. 「你的报销单已提交」 describes a record and is not
// a claim.
func claimsAction(text string, verbs []string) bool {
	if len(verbs) == 0 {
		return false
	}
	key := strings.Join(verbs, "|")
	re, ok := claimCache.Load(key)
	if !ok {
		quoted := make([]string, len(verbs))
		for i, v := range verbs {
			quoted[i] = regexp.QuoteMeta(v)
		}
		vs := strings.Join(quoted, "|")
		re = regexp.MustCompile(`(?:(?:^|[我，。！；,.!;:：\s])已(?:经)?(?:成功)?(?:` + agents + `)?|已(?:经)?(?:` + agents + `)|(?:` + agents + `))` +
			`(?:成功)?(?:` + vs + `)(?:了|好|成功|完成)?`)
		claimCache.Store(key, re)
	}
	for _, loc := range re.(*regexp.Regexp).FindAllStringIndex(text, -1) {
		m := text[loc[0]:loc[1]]
		// 「为你提交」 alone is an offer (「我可以为你提交」) unless it is done: 了, 好, 成功.
		if strings.Contains(m, "已") || strings.HasSuffix(m, "了") || strings.HasSuffix(m, "好") || strings.HasSuffix(m, "成功") ||
			strings.HasSuffix(m, "完成") {
			return true
		}
	}
	return false
}

// citesResult reports whether text cites a tool result: one of phrases,
// not negated (「没有查到」 says there is none).
func citesResult(text string, phrases []string) bool {
	for _, p := range phrases {
		for i := 0; p != ""; {
			j := strings.Index(text[i:], p)
			if j < 0 {
				break
			}
			at := i + j
			if !negatedBefore(text[:at]) {
				return true
			}
			i = at + len(p)
		}
	}
	return false
}

// negatedBefore: the two characters before are a negation.
func negatedBefore(before string) bool {
	r := []rune(before)
	tail := string(r[max(0, len(r)-2):])
	return strings.ContainsAny(tail, "没未不无")
}

// Who a request is about. Skills answer for the verified sender only, so
// a request about someone else gets the sender's own record; the answer
// must not relabel it. A person is found the way employees name them: a
// surname with a title (李经理, 王总), a title of the asker's (我老板), or a
// full name (王芳, 张伟) followed by what is asked of them (的, 还有,
// 这个月 …).
var (
	titles        = []string{"经理", "主管", "领导", "老板", "总监", "组长", "部长", "主任", "老师", "同事", "总"}
	surnames      = "王李张刘陈杨赵黄吴徐孙胡朱林郭罗梁宋郑韩唐冯董萧程曹袁邓傅沈彭吕苏卢蒋蔡贾丁魏薛叶阎潘杜戴钟汪姜范姚谭廖邹熊陆郝孔崔毛邱秦顾侯邵孟"
	personCues    = []string{"的", "还有", "还剩", "这个月", "上个月", "本月", "今年", "去年", "这周", "上周"}
	personPrefix  = []string{"看看", "看下", "看一下", "查查", "查下", "查一下", "帮我", "问下", "问问", "部", "组"}
	maxNameRunes  = 3 // surname and given name
	subjectMaxLen = 64
)

// otherSubject is the person other than the caller that text asks about,
// "" when none.
func otherSubject(text string) string {
	r := []rune(text)
	if len(r) > subjectMaxLen*4 {
		r = r[:subjectMaxLen*4] // who a request is about is said at its start
	}
	for i := range r {
		if !boundaryBefore(r[:i]) {
			continue
		}
		if s := personAt(r[i:]); s != "" {
			return s
		}
	}
	return ""
}

// personAt is the person named at the start of r, "" when none.
func personAt(r []rune) string {
	rest := string(r)
	if strings.HasPrefix(rest, "我") { // 我老板, 我们经理
		after := strings.TrimPrefix(strings.TrimPrefix(rest, "我"), "们")
		for _, t := range titles {
			if t != "总" && t != "同事" && strings.HasPrefix(after, t) {
				return t
			}
		}
		return ""
	}
	if !strings.ContainsRune(surnames, r[0]) {
		return ""
	}
	after := string(r[1:])
	for _, t := range titles {
		if strings.HasPrefix(after, t) && t != "同事" {
			return string(r[0]) + t
		}
	}
	for n := maxNameRunes; n >= 2; n-- {
		if len(r) <= n || !allHan(r[:n]) {
			continue
		}
		next := string(r[n:])
		for _, c := range personCues {
			if strings.HasPrefix(next, c) {
				return string(r[:n])
			}
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

// noteSubject books a skill's answer for the subject check, and tells the
// model whose record it is when the user asked about someone else.
func (r *run) noteSubject(c *callResult) {
	if !c.ran {
		return
	}
	if r.subject != "" && (strings.Contains(string(c.args), r.subject) || strings.Contains(c.obs.text, r.subject)) {
		r.answeredSubject = true
		return
	}
	r.answered++
	if r.subject != "" {
		c.obs.text += subjectNote(r.subject)
	}
}
