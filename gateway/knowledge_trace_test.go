package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestKnowledgeTraceHoldsOnlyWhatTheAskerMaySee: the model searches
// with words of a document only lihr may see; zhangsan's run trace lists
// the passage retrieved and cited for him, and no column of any table
// (trace, reply, gaps) holds the restricted passage. A question the
// documents do not answer becomes a gap.
func TestKnowledgeTraceHoldsOnlyWhatTheAskerMaySee(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == openai.ChatMessageRoleUser && strings.Contains(last.Content, "婚假"):
			return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall(knowledge.ToolName, `{"query":"婚假几天 总监月薪上限 薪酬等级表"}`)}}
		case last.Role == openai.ChatMessageRoleUser:
			return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall(knowledge.ToolName, `{"query":"陪产假"}`)}}
		case strings.Contains(last.Content, "婚假 3 天"):
			return openaitest.Reply{Content: "婚假为 3 天。"}
		}
		return openaitest.Reply{Content: "公司文档中没有这方面的规定。"}
	})
	ctx := context.Background()
	for _, d := range []knowledge.NewDocument{
		{Name: "leave.md", Title: "休假制度", Data: []byte("# 休假制度\n\n## 婚假\n\n员工依法登记结婚的，可享受婚假 3 天。\n")},
		{Name: "pay.md", Title: "薪酬等级表", Data: []byte("# 薪酬等级表\n\n| 职级 | 月薪上限 |\n|---|---|\n| 总监 | 58000 |\n"),
			Audience: knowledge.Audience{Corps: []string{gatewaytest.CorpID}, Users: []string{"lihr"}}},
	} {
		if _, err := knowledge.Add(ctx, h.Pool, d, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	h.StartExtra("", gateway.Deps{Features: append(gatewaytest.NewFeatures(), knowledge.New())})
	f := &gatewaytest.Chat{H: h, Clock: time.Now}

	if got := f.Say(t, "zhangsan", "婚假几天？"); !strings.Contains(got, "来源：《休假制度》") {
		t.Fatalf("reply = %q", got)
	}
	var obs string
	if err := h.Pool.QueryRow(ctx, `SELECT observation FROM run_steps WHERE kind = $1`, knowledge.TraceKind).Scan(&obs); err != nil {
		t.Fatal(err)
	}
	tr, ok := knowledge.ParseTrace(knowledge.TraceKind, obs)
	if !ok || len(tr.Retrieved) != 1 || !tr.Retrieved[0].Cited || !strings.HasPrefix(tr.Retrieved[0].Source, "《休假制度》") {
		t.Fatalf("trace step = %s", obs)
	}
	for _, where := range storetest.CopiesOf(t, h.Pool, "58000") {
		if !strings.HasPrefix(where, "knowledge_chunks.") { // the document itself
			t.Fatalf("a passage zhangsan may not see is stored in %s", where)
		}
	}

	f.Say(t, "zhangsan", "陪产假有几天？")
	if n := h.Count(`SELECT count(*) FROM knowledge_gaps WHERE question = '陪产假有几天？' AND found = 0`); n != 1 {
		t.Fatalf("%d gaps for the unanswered question", n)
	}
}
