package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// OfflineModelName is the model name in OfflineModel's responses.
const OfflineModelName = "hermes-offline-demo"

// offlinePrefix starts every text answer, so nobody mistakes the demo for
// a real model.
const offlinePrefix = "（离线演示模型）"

// OfflineModel is the built-in Model of `hermes demo` when no model is
// configured. It understands nothing: it picks a tool by keywords, guesses
// the required arguments it can, and repeats the tool's result. It is
// deterministic (same request, same response) and says plainly that it is
// an offline demo. The zero value is ready to use.
type OfflineModel struct{}

// offlineRoutes map keywords in the user's text to a word a tool name
// contains, tried in order: "年假制度" is a policy question before it is a
// leave question.
var offlineRoutes = []struct {
	hint     string
	keywords []string
}{
	{"policy", []string{"制度", "政策", "规定", "policy"}},
	{"leave", []string{"年假", "假期", "休假", "请假", "leave"}},
	{"ticket", []string{"工单", "报修", "ticket"}},
	{"payslip", []string{"工资", "薪资", "薪水", "payslip", "salary"}},
	// "重置 VPN 密码" is a password reset before it is a VPN request.
	{"password", []string{"密码", "password"}},
	{"vpn", []string{"VPN", "vpn", "远程访问", "内网"}},
	// A rule question no skill took goes to the company's documents
	// (gateway/knowledge's knowledge_search), when they are offered.
	{"knowledge", []string{"多少", "几天", "怎么", "能不能", "可以", "标准", "规定", "制度", "手册"}},
}

// offlineVerbs break ties between tools of one route (it_ticket_create and
// it_ticket_status): a tool whose name contains the key scores when the text
// contains one of the words.
var offlineVerbs = map[string][]string{
	"status": {"状态", "进度", "查", "怎么样", "到哪", "status"},
	"create": {"创建", "新建", "提", "报修", "开个", "create"},
	"search": {"搜索", "查找", "search"},
}

var (
	ticketIDRE = regexp.MustCompile(`[A-Za-z]+-[0-9]+`)
	numberRE   = regexp.MustCompile(`[0-9]+`)
)

// Chat answers one request; it fails only when ctx is done.
func (OfflineModel) Chat(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	if err := ctx.Err(); err != nil {
		return openai.ChatCompletionResponse{}, fmt.Errorf("agent: model: %w", err)
	}
	msgs := req.Messages
	if isMemoryExtraction(req) {
		return offlineText(offlineMemories(lastUserText(msgs))), nil
	}
	if len(msgs) > 0 && msgs[len(msgs)-1].Role == openai.ChatMessageRoleTool {
		return offlineText(summariseToolResults(msgs)), nil
	}
	text := lastUserText(msgs)
	tool, ok := pickTool(text, req.Tools)
	if got := offlineReceived(msgs); !ok && got != "" {
		return offlineText(offlinePrefix + got), nil
	}
	if notes := offlineNotes(msgs); !ok && notes != "" {
		return offlineText(offlinePrefix + "你之前告诉过我：" + notes + "。这件事我没有可用的技能来查，请联系相关同事。"), nil
	}
	if !ok {
		return offlineText(offlineIntro(req.Tools)), nil
	}
	args, missing := guessArgs(tool.Function, text)
	if missing != "" {
		return offlineText(fmt.Sprintf("%s要调用 %s 还需要参数 %s，我猜不出来。请在问题里写清楚，例如工单号写成 INC-1001 这样。",
			offlinePrefix, tool.Function.Name, missing)), nil
	}
	call := openai.ToolCall{
		ID:       fmt.Sprintf("call_%d", countToolCalls(msgs)+1),
		Type:     openai.ToolTypeFunction,
		Function: openai.FunctionCall{Name: tool.Function.Name, Arguments: args},
	}
	return offlineResponse(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant,
		ToolCalls: []openai.ToolCall{call}}, openai.FinishReasonToolCalls), nil
}

func offlineText(s string) openai.ChatCompletionResponse {
	return offlineResponse(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: s},
		openai.FinishReasonStop)
}

func offlineResponse(msg openai.ChatCompletionMessage, finish openai.FinishReason) openai.ChatCompletionResponse {
	return openai.ChatCompletionResponse{
		ID:      "chatcmpl-offline",
		Object:  "chat.completion",
		Model:   OfflineModelName,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
	}
}

// offlineReceived says what the last user message carried besides text
// (images as content parts, documents as 「[文件 name]」 and their text),
// "" when nothing: the demo shows that attachments reach the model.
func offlineReceived(msgs []openai.ChatCompletionMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != openai.ChatMessageRoleUser {
			continue
		}
		var parts []string
		images := 0
		text := m.Content
		for _, p := range m.MultiContent {
			switch p.Type {
			case openai.ChatMessagePartTypeImageURL:
				images++
			case openai.ChatMessagePartTypeText:
				text += p.Text
			}
		}
		if images > 0 {
			parts = append(parts, fmt.Sprintf("%d 张图片", images))
		}
		for _, f := range strings.Split(text, "[文件 ")[1:] {
			name, body, _ := strings.Cut(f, "]")
			parts = append(parts, fmt.Sprintf("文件「%s」（%d 字）", name, utf8.RuneCountInString(strings.TrimSpace(body))))
		}
		if len(parts) == 0 {
			return ""
		}
		return "我看不懂内容，但收到了：" + strings.Join(parts, "，") + "。接上视觉模型（model.vision）后，模型会看到图片本身。"
	}
	return ""
}

// lastUserText is the text of the last user message, with a note of the
// images it carried (the demo model says what it received).
func lastUserText(msgs []openai.ChatCompletionMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != openai.ChatMessageRoleUser {
			continue
		}
		if len(msgs[i].MultiContent) == 0 {
			_, text := splitNotes(msgs[i].Content)
			return text
		}
		var text string
		images := 0
		for _, p := range msgs[i].MultiContent {
			switch p.Type {
			case openai.ChatMessagePartTypeText:
				text += p.Text
			case openai.ChatMessagePartTypeImageURL:
				images++
			}
		}
		_, text = splitNotes(text)
		return text + fmt.Sprintf("\n（收到 %d 张图片）", images)
	}
	return ""
}

func countToolCalls(msgs []openai.ChatCompletionMessage) int {
	n := 0
	for _, m := range msgs {
		n += len(m.ToolCalls)
	}
	return n
}

// pickTool chooses the offered tool for the first route whose keywords
// occur in text: by name first, else by description.
func pickTool(text string, tools []openai.Tool) (openai.Tool, bool) {
	lower := strings.ToLower(text)
	for _, route := range offlineRoutes {
		if !containsAny(lower, route.keywords) {
			continue
		}
		var candidates []openai.Tool
		for _, t := range tools {
			if t.Function != nil && !isBuiltin(t.Function.Name) && strings.Contains(t.Function.Name, route.hint) {
				candidates = append(candidates, t)
			}
		}
		if len(candidates) == 0 {
			for _, t := range tools {
				if t.Function != nil && !isBuiltin(t.Function.Name) && containsAny(t.Function.Description, route.keywords) {
					candidates = append(candidates, t)
				}
			}
		}
		if len(candidates) > 0 {
			return bestByVerb(lower, candidates), true
		}
	}
	return openai.Tool{}, false
}

func bestByVerb(text string, candidates []openai.Tool) openai.Tool {
	best, bestScore := candidates[0], -1
	for _, t := range candidates {
		score := 0
		for key, words := range offlineVerbs {
			if strings.Contains(t.Function.Name, key) && containsAny(text, words) {
				score++
			}
		}
		if key := "status"; strings.Contains(t.Function.Name, key) && ticketIDRE.MatchString(text) {
			score++ // "INC-1001 呢？" asks about an existing ticket
		}
		if score > bestScore { // strict: ties keep the earlier tool
			best, bestScore = t, score
		}
	}
	return best
}

// offlineSchema is the part of a JSON Schema the guesser reads.
type offlineSchema struct {
	Properties map[string]struct {
		Type        string `json:"type"`
		Enum        []any  `json:"enum"`
		Description string `json:"description"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// guessArgs fills the schema's required properties from the user's text.
// It returns the arguments as JSON, or the name of the first property it
// cannot guess.
func guessArgs(fn *openai.FunctionDefinition, text string) (args, missing string) {
	var schema offlineSchema
	if raw, err := json.Marshal(fn.Parameters); err == nil {
		_ = json.Unmarshal(raw, &schema) // an odd schema just means no guesses
	}
	values := map[string]any{}
	for _, name := range schema.Required {
		prop := schema.Properties[name]
		if prop.Description == subjectDescription {
			// Whose data (whose.go): the demo model reads no names;
			// Hermes's own check of the text decides.
			values[name] = "self"
			continue
		}
		v, ok := guessEnum(prop.Enum, text)
		if !ok {
			v, ok = guessValue(name, prop.Type, text)
		}
		if !ok {
			return "", name
		}
		values[name] = v
	}
	out, _ := json.Marshal(values) // map keys are sorted: deterministic
	return string(out), ""
}

// guessEnum picks the allowed value the text mentions ("VPN" → "vpn",
// "7 天" → 7), or the first one when it mentions none.
func guessEnum(enum []any, text string) (any, bool) {
	if len(enum) == 0 {
		return nil, false
	}
	lower := strings.ToLower(text)
	for _, v := range enum {
		if s := strings.ToLower(fmt.Sprint(v)); s != "" && strings.Contains(lower, s) {
			return v, true
		}
	}
	return enum[0], true
}

func guessValue(name, typ, text string) (any, bool) {
	text = strings.TrimSpace(text)
	switch {
	case name == "id" || strings.HasSuffix(name, "_id"):
		id := ticketIDRE.FindString(text)
		return strings.ToUpper(id), id != ""
	case typ == "integer" || typ == "number":
		n := numberRE.FindString(text)
		return json.Number(n), n != ""
	case typ != "string" && typ != "":
		return nil, false
	case name == "title" || name == "subject":
		// "帮我提个工单：笔记本连不上 VPN" → the part after the colon.
		if _, after, ok := strings.Cut(strings.ReplaceAll(text, ":", "："), "："); ok && strings.TrimSpace(after) != "" {
			text = strings.TrimSpace(after)
		}
		return truncateRunes(text, 30), text != ""
	default: // query, description, question...: the whole text
		return text, text != ""
	}
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// summariseToolResults repeats the trailing tool results: the "summary"
// field when a result is a JSON object that has one, else the raw text.
func summariseToolResults(msgs []openai.ChatCompletionMessage) string {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == openai.ChatMessageRoleTool {
		start--
	}
	names := map[string]string{} // tool_call_id → tool name
	if start > 0 {
		for _, c := range msgs[start-1].ToolCalls {
			names[c.ID] = c.Function.Name
		}
	}
	var b strings.Builder
	b.WriteString(offlinePrefix)
	for _, m := range msgs[start:] {
		name := names[m.ToolCallID]
		if name == "" {
			name = "工具"
		}
		if strings.HasPrefix(m.Content, "error: ") {
			fmt.Fprintf(&b, "调用 %s 失败：%s\n", name, strings.TrimPrefix(m.Content, "error: "))
			continue
		}
		fmt.Fprintf(&b, "我调用了 %s，结果：%s\n", name, resultSummary(m.Content))
	}
	b.WriteString("这是离线演示：我只按关键词选工具、原样转述结果；配置真实模型后会得到自然的回答。")
	return b.String()
}

func resultSummary(content string) string {
	var obj map[string]any
	if json.Unmarshal([]byte(content), &obj) == nil {
		if s, ok := obj["summary"].(string); ok && s != "" {
			return s
		}
	}
	// Passages of documents (gateway/knowledge's knowledge_search: a
	// document's 《title》 line, then its passages): the best one's text,
	// which is what a real model would answer from.
	if head, text, ok := strings.Cut(content, "\n"); ok && strings.HasPrefix(head, "《") && strings.TrimSpace(text) != "" {
		text, _, _ = strings.Cut(text, "\n\n")
		return "文档里写着：" + truncateRunes(strings.TrimSpace(text), 200)
	}
	return truncateRunes(strings.TrimSpace(content), 300)
}

// offlineIntro explains what the demo model can do with the offered tools.
func offlineIntro(tools []openai.Tool) string {
	var b strings.Builder
	b.WriteString(offlinePrefix + "我是离线演示模型，不理解自然语言，只会按关键词（年假、制度、工单、工资）挑选工具。")
	tools = slices.DeleteFunc(slices.Clone(tools), func(t openai.Tool) bool { return t.Function == nil || isBuiltin(t.Function.Name) })
	if len(tools) == 0 {
		b.WriteString("现在没有可用的工具。")
		return b.String()
	}
	b.WriteString("可用的工具：")
	for i, t := range tools {
		if i > 0 {
			b.WriteString("；")
		}
		desc, _, _ := strings.Cut(t.Function.Description, "。")
		fmt.Fprintf(&b, "%s（%s）", t.Function.Name, truncateRunes(desc, 40))
	}
	b.WriteString("。试试问：“我还有几天年假？”")
	return b.String()
}
