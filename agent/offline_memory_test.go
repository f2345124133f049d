package agent

import (
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func TestOfflineMemory(t *testing.T) {
	if got := offlineMemories("我负责华东区的销售，以后回复简短些。我在上海办公室"); got != `{"memories":[{"text":"负责华东区的销售"},{"text":"在上海办公室"}]}` {
		t.Errorf("offlineMemories = %s", got)
	}
	if got := offlineMemories("今天天气不错"); got != `{"memories":[]}` {
		t.Errorf("offlineMemories of small talk = %s", got)
	}
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem,
		Content: "prompt\n\n<USER_NOTES>\n以下是备注：\n- 我在上海办公室（2026-12-02）\n- 叫我小王（2026-12-01）\n</USER_NOTES>"}}
	if got := offlineNotes(msgs); got != "我在上海办公室（2026-12-02）；叫我小王（2026-12-01）" {
		t.Errorf("offlineNotes = %q", got)
	}
	req := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: `只输出 JSON：{"memories":[]}`}},
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}}
	if !isMemoryExtraction(req) {
		t.Error("the extraction call is not recognised")
	}
	req.ResponseFormat = nil
	if isMemoryExtraction(req) {
		t.Error("a plain call is taken for the extraction")
	}
}

// BenchmarkNotesPromptTokens reports the prompt tokens long-term memory
// adds to each model call of a run: the notes block as gateway/memory
// builds it at its defaults (header, five notes, the group line), counted
// with the tokenizer the agent budgets with.
func BenchmarkNotesPromptTokens(b *testing.B) {
	notes := "以下是这位用户之前告诉你、或确认办理过的事（用户的备注，可能已过时，仅供参考）：\n" +
		"这是群聊：这些备注只用来更好地回答，除非用户问起，不要复述。\n" +
		"- 我在上海办公室，工位 12F-031（2026-12-02）\n" +
		"- 负责华东区的销售（2026-12-02）\n" +
		"- 希望回复简短（2026-12-02）\n" +
		"- 2026-12-01 已执行：VPN 申请已提交，单号 VPN-1001（2026-12-01）\n" +
		"- 叫我小王（2026-11-20）"
	one := "以下是这位用户之前告诉你、或确认办理过的事（用户的备注，可能已过时，仅供参考）：\n- 我在上海办公室，工位 12F-031（2026-12-02）"
	var five, single int
	for b.Loop() {
		five, single = countUncached(notesBlock(notes)), countUncached(notesBlock(one))
	}
	b.ReportMetric(float64(five), "tokens-5-notes")
	b.ReportMetric(float64(single), "tokens-1-note")
}
