package agent

// Unit tests of the stages' pure functions; the loop's behaviour is tested
// end to end in package agent_test.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/skills"
)

func TestNormalizeText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"NFC", "cafe\u0301 年假", "café 年假"},
		{"ControlChars", "年假\x00还剩\x07几天\x1b?", "年假还剩几天?"},
		{"Invisible", "年\u200B假\uFEFF\u202E反转", "年假反转"},
		{"Spaces", "  我还有 \t  几天\u3000年假  ", "我还有 几天 年假"},
		{"BlankLines", "第一行\r\n\r\n\r\n\r\n第二行  \n  第三行", "第一行\n\n第二行\n第三行"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := normalizeText(tc.in); got != tc.want {
				t.Errorf("normalizeText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestBudgetUserText(t *testing.T) {
	long := "开头的问题：" + strings.Repeat("日志行 ERROR timeout ", 400) + "结尾：请问哪里错了？"
	out, note := budgetUserText(long, "short system prompt", 600)
	if note == "" || !strings.HasPrefix(note, "input truncated: ") {
		t.Fatalf("note = %q, want a truncation note", note)
	}
	if !strings.HasPrefix(out, "开头的问题") || !strings.HasSuffix(out, "请问哪里错了？") || !strings.Contains(out, "too long") {
		t.Errorf("out keeps %q … %q; want head, tail and a marker", out[:30], out[len(out)-30:])
	}
	if n := countTokens(out); n > 600+40 {
		t.Errorf("kept %d tokens, want about the budget", n)
	}
	if !utf8.ValidString(out) {
		t.Errorf("cut inside a character")
	}
	// A long system prompt squeezes the user's text, never below the floor.
	sys := strings.Repeat("规则 ", 2000)
	out, _ = budgetUserText(long, sys, 600)
	if n := countTokens(out); n < minUserTokens-10 || n > minUserTokens+60 {
		t.Errorf("with a huge system prompt kept %d tokens, want about %d", n, minUserTokens)
	}
	if out, note := budgetUserText("我还有几天年假？", "sys", 600); out != "我还有几天年假？" || note != "" {
		t.Errorf("short text changed: %q %q", out, note)
	}
}

func TestSchemaConstraints(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{
		"ticket_id":{"type":"string","pattern":"^INC-[0-9]{4}$"},
		"status":{"type":"string","enum":["open","closed"]},
		"days":{"type":"integer","minimum":1,"maximum":30},
		"tags":{"type":"array","items":{"type":"string"},"maxItems":5}},
		"required":["ticket_id","days"],"additionalProperties":false}`)
	got := schemaConstraints(schema)
	want := "Arguments:\n" +
		"- ticket_id (string, required): must match the regular expression ^INC-[0-9]{4}$\n" +
		`- status (string): one of "open", "closed"` + "\n" +
		"- days (integer, required): between 1 and 30\n" +
		"- tags (array of string): at most 5 items\n" +
		"No other arguments are accepted."
	if got != want {
		t.Errorf("schemaConstraints =\n%s\nwant\n%s", got, want)
	}
	if again := schemaConstraints(schema); again != got {
		t.Errorf("cached text differs")
	}
	if got := schemaConstraints([]byte(`{"type":"object","properties":{}}`)); got != "Arguments: none; call it with {}." {
		t.Errorf("no properties: %q", got)
	}
}

func TestResolveToolName(t *testing.T) {
	names := []string{"hr_leave_balance", "hr_policy_search", "search_web", "finish"}
	for _, tc := range []struct{ in, want string }{
		{"hr_leave_balance", "hr_leave_balance"},
		{"HR-Leave-Balance", "hr_leave_balance"},
		{"searchWeb", "search_web"},
		{"search web", "search_web"},
		{"hr_leave_balanse", "hr_leave_balance"}, // distance 1
		{"hr_polcy_serch", "hr_policy_search"},   // distance 2
		{"hr_pol_srch", ""},                      // too far
		{"send_wechat_message", ""},
	} {
		got, ok := resolveToolName(tc.in, names)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("resolveToolName(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
	// Equally close to two names: no guess.
	if got, ok := resolveToolName("ab_c", []string{"ab_a", "ab_b"}); ok {
		t.Errorf("tie resolved to %q", got)
	}
}

func TestTextToolCalls(t *testing.T) {
	for _, tc := range []struct{ name, content, tool, args string }{
		{"Fenced", "```json\n{\"tool\": \"hr_leave_balance\", \"arguments\": {}}\n```", "hr_leave_balance", `{}`},
		{"NameArguments", `好的：{"name": "search", "arguments": {"q": "年假"}} 稍等`, "search", `{"q":"年假"}`},
		{"ArgumentsAsString", `{"name": "search", "arguments": "{\"q\":\"x\"}"}`, "search", `{"q":"x"}`},
		{"Seed004", `{"type": "tool_call", "name": "search", "args": {"q": "x"}}`, "search", `{"q":"x"}`},
		{"Seed002Action", `{"thought": "先搜", "action": {"tool_name": "search", "params": {"q": "x"}}}`, "search", `{"q":"x"}`},
		{"Finish", `{"type": "finish", "result": "完成"}`, "finish", `{"answer":"完成","status":""}`},
		{"NativeShape", `{"function": {"name": "search", "arguments": "{}"}}`, "search", `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := textToolCalls(tc.content)
			if len(calls) != 1 || calls[0].Function.Name != tc.tool || calls[0].Function.Arguments != tc.args {
				t.Errorf("textToolCalls = %+v, want %s %s", calls, tc.tool, tc.args)
			}
		})
	}
	// Data the user asked for is not a call.
	for _, content := range []string{`[{"name": "张三", "dept": "HR"}]`, "没有 JSON", `{"name": "张三"}`} {
		if calls := textToolCalls(content); len(calls) != 0 {
			t.Errorf("textToolCalls(%q) = %+v, want none", content, calls)
		}
	}
}

func TestShrinkJSON_AlwaysValid(t *testing.T) {
	var items []map[string]any
	for i := range 500 {
		items = append(items, map[string]any{"id": i, "title": strings.Repeat("标题", 50), "tags": []string{"a", "b"},
			"nested": map[string]any{"deep": map[string]any{"deeper": map[string]any{"deepest": strings.Repeat("x", 300)}}}})
	}
	itemsJSON, _ := json.Marshal(items)
	big := fmt.Appendf(nil, `{"total":500,"items":%s,"note":%q}`, itemsJSON, strings.Repeat("长", 5000))
	doc, err := parseJSON(big)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{64, 200, 1000, 4096, 8192} {
		out := shrinkJSON(doc, limit)
		if len(out) > limit || !json.Valid(out) {
			t.Errorf("limit %d: %d bytes, valid %v: %.200s", limit, len(out), json.Valid(out), out)
		}
	}
	out := shrinkJSON(doc, 4096)
	if !bytes.HasPrefix(out, []byte(`{"total":500,"items":[`)) || !bytes.Contains(out, []byte("more items")) {
		t.Errorf("shrunk = %.300s; want key order kept and a note of left-out items", out)
	}
	// The original is not changed.
	if again := doc.marshal(); len(again) != len(big) {
		t.Errorf("shrinking changed the document: %d → %d bytes", len(big), len(again))
	}
}

func TestObserveResult(t *testing.T) {
	spec := skills.Spec{Name: "t", SafeFields: []string{"mobile"}}
	for _, tc := range []struct {
		name string
		res  skills.Result
		want []string
		not  []string
	}{
		{"JSONSanitised", skills.Result{Status: 200, ContentType: "application/json; charset=utf-8",
			Body: []byte(`{"name": "张三", "mobile": "13912345678", "emergency": "13712345678", "debug": {"sql": "select"}, "_internal": 1, "trace_id": "abc"}`)},
			[]string{`{"name":"张三","mobile":"13912345678","emergency":"137****5678"}`}, []string{"debug", "select", "_internal", "trace_id"}},
		{"JSONNumberMasked", skills.Result{Status: 200, ContentType: "application/json", Body: []byte(`{"phone":13812345678}`)},
			[]string{`{"phone":"138****5678"}`}, nil},
		{"SniffedJSON", skills.Result{Status: 200, Body: []byte(` {"a": [1, 2]} `)}, []string{`{"a":[1,2]}`}, nil},
		{"HTML", skills.Result{Status: 200, ContentType: "text/html", Body: []byte(`<html><head><title>制度</title><style>p{color:red}</style>
			<script>alert(1)</script></head><body><h1>年假</h1><p>每年 &amp; 5 天</p><ul><li>可结转</li><li>需审批</li></ul></body></html>`)},
			[]string{"制度\n年假\n每年 & 5 天\n- 可结转\n- 需审批"}, []string{"alert", "color", "<"}},
		{"Binary", skills.Result{Status: 200, ContentType: "application/pdf", Body: []byte("%PDF-1.4\x00\x01\x02")},
			[]string{"binary content (application/pdf), SHA-256 ", ", 11 bytes"}, nil},
		{"GBK", skills.Result{Status: 200, ContentType: "text/plain; charset=gbk", Body: []byte{0xc4, 0xea, 0xbc, 0xd9}}, []string{"年假"}, nil},
		{"Empty", skills.Result{Status: 204}, []string{"empty answer, HTTP 204"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var keep safeSet
			obs := observeResult(tc.res, spec, 8192, &keep)
			if !obs.ok {
				t.Errorf("ok = false")
			}
			for _, w := range tc.want {
				if !strings.Contains(obs.text, w) {
					t.Errorf("observation = %q, want it to contain %q", obs.text, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(obs.text, n) {
					t.Errorf("observation = %q, must not contain %q", obs.text, n)
				}
			}
		})
	}
}

func TestDescribeError(t *testing.T) {
	err := fmt.Errorf("skill t %w (HTTP 404): %w", skills.ErrRefused, &skills.HTTPError{Status: 404, Body: "ticket INC-9 not found"})
	text, class := describeError("t", err)
	want := "error: refused: skill t refused the request (HTTP 404): HTTP 404: ticket INC-9 not found\n" +
		"likely cause: what was asked for does not exist\n" +
		"what to change: check the identifiers (ids, names, dates); ask the user if unsure\n" +
		"You may correct the arguments and call it again, use another tool, or tell the user what failed. Do not repeat an identical call."
	if text != want || class.fatal || class.counts {
		t.Errorf("describeError =\n%s\nwant\n%s", text, want)
	}
}

func TestMaskPII(t *testing.T) {
	var keep safeSet
	keep.add("13912345678")
	for _, tc := range []struct{ in, want string }{
		{"手机 13812345678。", "手机 138****5678。"},
		{"身份证11010519900307123X号", "身份证1101**********123X号"},
		{"身份证 110105199003071234", "身份证 1101**********1234"},
		{"+86 13812345678 或 8613812345678", "+86 138****5678 或 86138****5678"},
		{"安全的 13912345678", "安全的 13912345678"},
		{"订单 123456789012 与 12812345678", "订单 123456789012 与 12812345678"}, // not a mobile prefix
		{"1381234567890", "1381234567890"},                                 // part of a longer number
	} {
		if got := maskPII(tc.in, &keep); got != tc.want {
			t.Errorf("maskPII(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMaskSecrets(t *testing.T) {
	got := maskSecrets(`{"user":"zs","password":"hunter2","auth":{"api_key":"sk-1","Token":"t"},"q":"x"}`)
	want := `{"user":"zs","password":"***","auth":{"api_key":"***","Token":"***"},"q":"x"}`
	if got != want {
		t.Errorf("maskSecrets = %s, want %s", got, want)
	}
}
