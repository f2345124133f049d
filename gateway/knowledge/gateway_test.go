package knowledge_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/knowledge"
)

// TestKnowledgeAnswerNamesItsSourceAddedByHermes: a rule question is
// offered knowledge_search, the model answers from its passage without
// naming it, and the reply the user gets ends with the document's title
// and section, added by Hermes; a greeting is offered no tool.
func TestKnowledgeAnswerNamesItsSourceAddedByHermes(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var mu sync.Mutex
	var offered [][]string
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		mu.Lock()
		defer mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		if last.Role == openai.ChatMessageRoleUser {
			var names []string
			for _, tl := range req.Tools {
				names = append(names, tl.Function.Name)
			}
			offered = append(offered, names)
			if strings.Contains(last.Content, "婚假") {
				return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall(knowledge.ToolName, `{"query":"婚假几天"}`)}}
			}
			return openaitest.Reply{Content: "你好！"}
		}
		return openaitest.Reply{Content: "婚假为 3 天，须在登记后一年内休完。"}
	})
	_, err := knowledge.Add(context.Background(), h.Pool, knowledge.NewDocument{Name: "leave.md", Title: "休假制度",
		Data: []byte("# 休假制度\n\n## 婚假\n\n员工依法登记结婚的，可享受婚假 3 天，须在登记后一年内休完。\n")}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.StartExtra("", gateway.Deps{Features: append(gatewaytest.NewFeatures(), knowledge.New())})
	f := &gatewaytest.Chat{H: h, Clock: time.Now}

	got := f.Say(t, "zhangsan", "结婚能休几天婚假？")
	if !strings.HasSuffix(got, "\n\n来源：《休假制度》 · 婚假") || !strings.Contains(got, "婚假为 3 天") {
		t.Fatalf("reply = %q", got)
	}
	f.Say(t, "zhangsan", "你好")
	mu.Lock()
	defer mu.Unlock()
	if len(offered) != 2 || !slices.Contains(offered[0], knowledge.ToolName) || len(offered[1]) != 0 {
		t.Fatalf("tools offered = %v; want knowledge_search for the rule question, none for the greeting", offered)
	}
}
