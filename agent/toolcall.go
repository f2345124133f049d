package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
)

// Models get tool calls wrong in a few predictable ways: a name in another
// case or with dashes ("HR-Leave-Balance"), a name one typo away, a call
// written as JSON in the text instead of a native tool call, arguments that
// miss the schema. This file turns each into either a call the loop can run
// or an error the model can correct.

// maxNameDistance is the edit distance within which a misspelt tool name
// is corrected to a registered one (seed 002 §4.1).
const maxNameDistance = 2

// normalizeToolName folds the spellings models produce for one name:
// "searchWeb", "Search-Web" and "search web" all become "search_web".
func normalizeToolName(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r == '-' || r == '.' || r == '/' || unicode.IsSpace(r):
			r = '_'
		case unicode.IsUpper(r):
			if prevLower {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		if r == '_' && strings.HasSuffix(b.String(), "_") {
			continue
		}
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		b.WriteRune(r)
	}
	return strings.Trim(b.String(), "_")
}

// resolveToolName finds the registered name the model meant: the exact
// name, else the one with the same normalised form, else the single name
// closest within maxNameDistance. A tie is not guessed.
func resolveToolName(requested string, names []string) (string, bool) {
	for _, n := range names {
		if n == requested {
			return n, true
		}
	}
	norm := normalizeToolName(requested)
	for _, n := range names {
		if normalizeToolName(n) == norm {
			return n, true
		}
	}
	best, bestDist, tie := "", maxNameDistance+1, false
	for _, n := range names {
		d := editDistance(norm, normalizeToolName(n))
		switch {
		case d < bestDist:
			best, bestDist, tie = n, d, false
		case d == bestDist:
			tie = true
		}
	}
	if best == "" || tie {
		return "", false
	}
	return best, true
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// The JSON-in-text fallback: models without native tool calls (or with a
// weak chat template) write the call in their text, in shapes like
//
//	```json
//	{"tool": "hr_leave_balance", "arguments": {}}
//	```
//	{"name": "hr_policy_search", "arguments": {"query": "年假"}}
//	{"type": "tool_call", "name": "...", "args": {...}}      (seed 004)
//	{"thought": "...", "action": {"tool_name": "...", "params": {...}}}  (seed 002)
//	{"type": "finish", "result": "..."}
//
// textToolCalls finds them; the caller keeps only those naming a tool.
var (
	callNameKeys = []string{"tool", "name", "tool_name", "function"}
	callArgsKeys = []string{"arguments", "args", "parameters", "params", "input"}
)

// maxTextCallScans bounds the '{' positions tried in one text, so a long
// answer full of braces costs little.
const maxTextCallScans = 32

func textToolCalls(content string) []openai.ToolCall {
	if !strings.Contains(content, "{") {
		return nil
	}
	var calls []openai.ToolCall
	data := []byte(content)
	scans := 0
	for i := 0; i < len(data) && scans < maxTextCallScans; {
		j := bytes.IndexByte(data[i:], '{')
		if j < 0 {
			break
		}
		start := i + j
		scans++
		dec := json.NewDecoder(bytes.NewReader(data[start:]))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			i = start + 1
			continue
		}
		if c, ok := callFromObject(obj); ok {
			calls = append(calls, c)
		}
		i = start + int(dec.InputOffset())
	}
	return calls
}

func callFromObject(obj map[string]any) (openai.ToolCall, bool) {
	if action, ok := obj["action"].(map[string]any); ok {
		return callFromObject(action)
	}
	if t, _ := obj["type"].(string); t == "finish" {
		answer, _ := obj["result"].(string)
		if answer == "" {
			answer, _ = obj["answer"].(string)
		}
		args, _ := json.Marshal(finishArgs{Answer: answer})
		return textCall(toolFinish, string(args)), true
	}
	if fn, ok := obj["function"].(map[string]any); ok { // the native wire shape, written out
		return callFromObject(fn)
	}
	name, nameKey := "", ""
	for _, k := range callNameKeys {
		if s, ok := obj[k].(string); ok && s != "" {
			name, nameKey = s, k
			break
		}
	}
	hasArgs := false
	for _, k := range callArgsKeys {
		if _, ok := obj[k]; ok {
			hasArgs = true
		}
	}
	// {"name": ...} alone is as likely data the user asked for as a call:
	// only "tool"/"tool_name" make a call without arguments.
	if name == "" || (!hasArgs && nameKey != "tool" && nameKey != "tool_name") {
		return openai.ToolCall{}, false
	}
	args := "{}"
	for _, k := range callArgsKeys {
		switch v := obj[k].(type) {
		case map[string]any:
			b, _ := json.Marshal(v)
			args = string(b)
		case string: // arguments as a JSON string, like the native wire format
			args = v
		default:
			continue
		}
		break
	}
	return textCall(name, args), true
}

// onlyJSONObjects reports whether content is nothing but JSON objects,
// optionally in one ```json fence: a message that is the call itself, not
// prose quoting one.
func onlyJSONObjects(content string) bool {
	content = strings.TrimSpace(content)
	if fenced, ok := strings.CutPrefix(content, "```"); ok {
		_, body, _ := strings.Cut(fenced, "\n") // drop the language tag
		content, ok = strings.CutSuffix(strings.TrimSpace(body), "```")
		if !ok {
			return false
		}
	}
	dec := json.NewDecoder(strings.NewReader(content))
	n := 0
	for ; ; n++ {
		var obj map[string]any
		err := dec.Decode(&obj)
		if err == io.EOF {
			return n > 0
		}
		if err != nil || obj == nil {
			return false
		}
	}
}

func textCall(name, args string) openai.ToolCall {
	return openai.ToolCall{Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}

// argsError is a validation failure, written for the model to correct.
type argsError struct {
	tool, problem, expected, actual string
}

func (e *argsError) Error() string {
	return fmt.Sprintf("error: invalid_arguments for %s: %s\nexpected: %s\nactual: %s\n"+
		"hint: call %s again with arguments that meet the expected constraints; use the values the user gave and do not invent missing ones (ask the user instead).",
		e.tool, e.problem, e.expected, e.actual, e.tool)
}

// validateArgs checks the model's arguments before anything runs: a JSON
// object ("" counts as {}: some models send nothing for tools without
// parameters) that satisfies the tool's schema. It returns the arguments
// to send.
func validateArgs(e *toolEntry, args string) (json.RawMessage, *argsError) {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	expected := schemaConstraints(e.params)
	if expected == "" {
		expected = string(e.params)
	}
	fail := func(problem string) *argsError {
		return &argsError{tool: e.spec.Name, problem: problem, expected: strings.ReplaceAll(expected, "\n", " "),
			actual: cutHeadTail(args, 600)}
	}
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return nil, fail("not valid JSON (" + err.Error() + ")")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fail("the arguments must be a JSON object")
	}
	if e.schema != nil {
		if err := e.schema.Validate(v); err != nil {
			return nil, fail(strings.TrimPrefix(err.Error(), "validating root: "))
		}
	}
	return json.RawMessage(args), nil
}
