package agent

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"
)

// Answers checked against what ran (seed 004 §4.1: every result must come
// from a real tool). Before an answer is sent it is checked for three
// things a model says that the run contradicts:
//
//   - it claims an action (已提交, 已为你重置 …) and no write ran in this run;
//   - it cites a tool result (根据系统查询结果 …) and no skill answered;
//   - the user asked about someone else (「李经理这个月的考勤」, found by
//     whose.go), the skills answered with the caller's own record (they
//     answer for the verified sender only), and the answer names that
//     person without saying the data is the caller's own.
//
// The model is told once what is wrong and answers again, free of the
// step budget; if the new answer is wrong too, the user gets the honest
// sentence of Messages instead (NotPerformed, NoResult, OwnDataOnly; for
// a request about the asker and someone else, the answer's part about the
// asker, which the reply then labels as theirs: whose_together.go). The
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
	case r.relabeled(text) != "":
		who := r.relabeled(text)
		return answerIssue{kind: "caller's data relabeled",
			correction: fmt.Sprintf("Check your answer: the skills answer for the caller only, so the results are the caller's own records, not %s's. "+
				"Rewrite it: say you can only show the caller's own data, and present it as the caller's, never as %s's.", who, who),
			fallback: r.ownAnswerOnly(text, who)}, true
	}
	return answerIssue{}, false
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
