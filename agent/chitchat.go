package agent

import (
	"strings"
	"unicode"
)

// Chit-chat: a message that asks for no company data — a greeting, thanks,
// a birthday wish to write, a word to explain or translate — is offered no
// skill at all, so no skill can run for it. It may still mention a
// company word (「提到年会」, 「解释什么是社保」), which matching alone would
// take for a request; a model shown the 社保 skill for it is tempted to
// call it and answer with the user's own record.
//
// The test is conservative, because hiding the skills from a real request
// is worse than offering them to small talk: a message is chit-chat only
// when it is a greeting alone, or when it asks for writing or explaining
// (noDataMarkers) and nothing in it asks for a record (dataMarkers). Text
// after a colon of a writing request is the material to work on, not a
// request (「翻译成英文：我下周请假」).

// maxGreetingRunes is the longest message taken for a bare greeting.
const maxGreetingRunes = 12

var (
	// greetings, alone on a message, ask for nothing.
	greetings = []string{"你好", "您好", "在吗", "在不在", "谢谢", "多谢", "感谢", "辛苦了", "辛苦", "早上好", "下午好", "晚上好",
		"晚安", "再见", "拜拜", "好的", "收到", "哈哈", "嗨", "hello", "hi", "thanks", "ok"}
	// noDataMarkers ask for writing or general knowledge.
	noDataMarkers = []string{"写一段", "写一封", "写一首", "写一篇", "写个", "写首", "写段", "祝福语", "生日祝福", "翻译", "润色",
		"笑话", "打油诗", "是什么意思", "什么是", "解释一下", "解释", "科普", "有什么区别", "什么区别", "文案", "致辞", "作文"}
	// dataMarkers ask for a record or for the company's rules.
	dataMarkers = []string{"我的", "我还", "我今年", "我上", "我这", "我本月", "帮我查", "查一下", "查下", "查询", "帮我看", "看看我",
		"多少", "几天", "申请", "办理", "提交", "公司的", "咱们公司", "我们公司", "我司", "公司规定", "能报", "怎么报",
		"进度", "状态", "余额"}
)

// isChitChat reports whether text asks for no company data.
func isChitChat(text string) bool {
	folded := matchNorm(strings.TrimSpace(text))
	if folded == "" {
		return false
	}
	if isGreeting(folded) {
		return true
	}
	marker := -1
	for _, m := range noDataMarkers {
		if i := strings.Index(folded, m); i >= 0 && (marker < 0 || i < marker) {
			marker = i
		}
	}
	if marker < 0 {
		return false
	}
	asked := folded
	if i := strings.IndexAny(folded[marker:], "：:"); i >= 0 { // the material after the colon is not a request
		asked = folded[:marker+i]
	}
	for _, m := range dataMarkers {
		if strings.Contains(asked, m) {
			return false
		}
	}
	return true
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
