package agent

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Before a run finishes, the answer is checked against the format the user
// asked for, from the plan's output format or, without a plan, from
// phrases of the request; a mismatch is sent back to the model once (seed 002
// §6.3). The checks are deliberately simple shape tests: they catch "asked
// for a table, got prose", not a wrong number of columns.

type formatKind string

const (
	formatNone     formatKind = ""
	formatTable    formatKind = "markdown table"
	formatNumbered formatKind = "numbered list"
	formatBullets  formatKind = "bulleted list"
	formatJSON     formatKind = "JSON"
)

// formatWords map words of a plan's output format to a format, tried in
// order: "JSON 表格" is a JSON request.
var formatWords = []struct {
	kind  formatKind
	words []string
}{
	{formatJSON, []string{"json"}},
	{formatTable, []string{"表格", "table"}},
	{formatNumbered, []string{"编号", "numbered", "有序列表", "序号"}},
	{formatBullets, []string{"要点", "bullet", "列表", "清单", "list"}},
}

// formatPhrases are what a request without a plan must say to ask for a
// format: whole phrases, since "表格" or "JSON" alone are as often what the
// user asks about ("报销表格在哪下载", "解释一下这段 JSON").
var formatPhrases = []struct {
	kind    formatKind
	phrases []string
}{
	{formatJSON, []string{"用json", "以json", "json格式", "json 格式", "输出json", "返回json", "as json", "in json", "json format"}},
	{formatTable, []string{"用表格", "以表格", "表格形式", "做成表格", "列成表", "列个表", "表格列出", "表格列一下", "as a table", "in a table", "markdown table"}},
	{formatNumbered, []string{"编号列出", "按编号", "分点列出", "逐条列出", "numbered list"}},
}

// requestedFormat reads the format the user asked for: from the plan's
// output format when there is a plan, else from phrases of the request.
func requestedFormat(userText string, plan *Plan) formatKind {
	if plan != nil {
		lower := strings.ToLower(plan.OutputFormat)
		for _, fw := range formatWords {
			for _, w := range fw.words {
				if strings.Contains(lower, w) {
					return fw.kind
				}
			}
		}
		return formatNone
	}
	lower := strings.ToLower(userText)
	for _, fp := range formatPhrases {
		for _, p := range fp.phrases {
			if strings.Contains(lower, p) {
				return fp.kind
			}
		}
	}
	return formatNone
}

var (
	tableSepRE  = regexp.MustCompile(`(?m)^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$`)
	numberedRE  = regexp.MustCompile(`(?m)^\s*\d+[.)、]\s*\S`)
	bulletRE    = regexp.MustCompile(`(?m)^\s*[-*•]\s+\S`)
	jsonFenceRE = regexp.MustCompile("(?s)```(?:json)?\\s*(.*?)```")
)

// formatOK reports whether answer has the shape of kind.
func formatOK(kind formatKind, answer string) bool {
	switch kind {
	case formatTable:
		return tableSepRE.MatchString(answer)
	case formatNumbered:
		return len(numberedRE.FindAllString(answer, 2)) >= 2
	case formatBullets:
		return len(bulletRE.FindAllString(answer, 2)) >= 2 || len(numberedRE.FindAllString(answer, 2)) >= 2
	case formatJSON:
		s := strings.TrimSpace(answer)
		if m := jsonFenceRE.FindStringSubmatch(s); m != nil {
			s = strings.TrimSpace(m[1])
		}
		return json.Valid([]byte(s))
	}
	return true
}

// formatFixRequest is the one message asking the model to fix the shape.
func formatFixRequest(kind formatKind) string {
	return "[Hermes check] The user asked for the answer as a " + string(kind) +
		", and your answer is not one. Rewrite the same answer as a " + string(kind) +
		" with the same facts; do not call tools and do not add anything."
}
