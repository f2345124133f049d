package agent

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func TestIsChitChat(t *testing.T) {
	for _, q := range loadLargeQuestions(t) {
		if got := isChitChat(q.Q); got != (q.Kind == "chitchat") {
			t.Errorf("isChitChat(%q) = %v, question kind %s", q.Q, got, q.Kind)
		}
	}
	for _, q := range loadQuestions(t) {
		if isChitChat(q.Q) {
			t.Errorf("isChitChat(%q) = true for a question of the sample catalog", q.Q)
		}
	}
	for _, q := range []string{"你好，我还有几天年假", "解释一下我的工资条", "帮我写一段请假理由并提交申请", "谢谢，帮我查下社保"} {
		if isChitChat(q) {
			t.Errorf("isChitChat(%q) = true, it asks for company data", q)
		}
	}
}

func TestColloquialExpansion(t *testing.T) {
	q := terms("催一下")
	newColloquialTable(nil).expand(matchNorm("催一下"), q)
	if q["催办"] == 0 {
		t.Errorf("催 not expanded to 催办: %v", q)
	}
	extra := newColloquialTable(map[string][]string{"搞定": {"关闭"}})
	q = terms("搞定了")
	extra.expand("搞定了", q)
	if q["关闭"] == 0 {
		t.Errorf("Options.Colloquial entry not used: %v", q)
	}
	if len(defaultColloquial["搞定"]) != 0 {
		t.Error("Options.Colloquial changed the default table")
	}
}

// The index of areas costs about the same at 100 and 500 skills.
func TestAreaIndexCostFlat(t *testing.T) {
	small := countTokens(areaIndex(largeCatalogSpecs(100), 8))
	large := countTokens(areaIndex(largeCatalogSpecs(500), 8))
	if large > 2*small || large > 500 {
		t.Errorf("area index: %d tokens at 100 skills, %d at 500; want flat and under 500", small, large)
	}
}

// scripted answers each request with the next reply and keeps the requests.
type scripted struct {
	replies []openai.ChatCompletionMessage
	reqs    []openai.ChatCompletionRequest
}

func (s *scripted) Chat(_ context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	s.reqs = append(s.reqs, req)
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "好的"}
	if len(s.replies) > 0 {
		msg, s.replies = s.replies[0], s.replies[1:]
	}
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: msg}}}, nil
}

func toolCallMsg(name, args string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{
		ID: "call_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}}}
}

func TestLoadSkillsSearch(t *testing.T) {
	var calls int
	m := &scripted{replies: []openai.ChatCompletionMessage{toolCallMsg("load_skills", `{"query":"给报修单打个分"}`)}}
	turn := Turn{SessionID: "s", RunID: "r", UserText: "上次那个维修的事", Tools: largeCatalog(500, &calls)}
	if _, err := Run(context.Background(), m, turn, Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	if len(m.reqs) < 2 {
		t.Fatalf("%d model calls", len(m.reqs))
	}
	var names []string
	for _, tool := range m.reqs[1].Tools {
		names = append(names, tool.Function.Name)
	}
	if !slices.Contains(names, "admin_repair_rate") {
		t.Errorf("after load_skills {query}, tools = %v; want admin_repair_rate", names)
	}
	if obs := m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Content; !strings.Contains(obs, "loaded: ") {
		t.Errorf("load_skills answered %q", obs)
	}
}

func TestChitChatOffersNothing(t *testing.T) {
	var calls int
	// A tempted model calls a skill it was not offered: it must not run.
	m := &scripted{replies: []openai.ChatCompletionMessage{toolCallMsg("hr_social_query", `{}`)}}
	turn := Turn{SessionID: "s", RunID: "r", UserText: "用一句话解释什么是社保", Tools: largeCatalog(100, &calls)}
	if _, err := Run(context.Background(), m, turn, Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	if req := m.reqs[0]; len(req.Tools) != 0 || strings.Contains(req.Messages[0].Content, "<SKILL_INDEX>") {
		t.Errorf("chit-chat offered %d tools (or the index)", len(req.Tools))
	}
	if calls != 0 {
		t.Errorf("a skill ran %d times for chit-chat", calls)
	}
}
