package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/skills"
)

// benchModel answers in-process with no latency: a tool call, then, once a
// tool result is in, an answer. It measures the loop, not a network.
type benchModel struct{}

func (benchModel) Chat(_ context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	if req.Messages[len(req.Messages)-1].Role == openai.ChatMessageRoleTool {
		msg.Content = "你今年还有 5 天年假，可结转至次年 3 月 31 日。"
	} else {
		msg.ToolCalls = []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "hr_leave_balance", Arguments: `{}`}}}
	}
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: msg}},
		Usage: openai.Usage{PromptTokens: 500, CompletionTokens: 20}}, nil
}

// BenchmarkRun_OneTurn is one agent turn with zero-latency fakes: input
// normalisation, offering four skills, the token budget, two model calls,
// argument validation, one tool call, observation shaping, masking and the
// trace. The per-turn cost is the loop's own overhead.
func BenchmarkRun_OneTurn(b *testing.B) {
	tools := []skills.Tool{
		&fakeTool{name: "hr_leave_balance", out: `{"remaining_days":5,"year":2026,"carry_over_until":"2027-03-31"}`, contentType: "application/json"},
		&fakeTool{name: "hr_policy_search", out: "年假可结转至次年 3 月 31 日。",
			params: `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`},
		&fakeTool{name: "it_ticket_create", out: `{"ticket_id":"INC-1004"}`,
			params: `{"type":"object","properties":{"title":{"type":"string","maxLength":60},"description":{"type":"string"}},"required":["title","description"]}`},
		&fakeTool{name: "it_ticket_status", out: `{"status":"处理中"}`,
			params: `{"type":"object","properties":{"ticket_id":{"type":"string","pattern":"^INC-[0-9]+$"}},"required":["ticket_id"]}`},
	}
	turn := agent.Turn{SessionID: "s1", RunID: "r1", SystemPrompt: "你是公司的 HR/IT 助手，回答要简洁。",
		History:  []agent.Message{{Role: agent.RoleUser, Content: "你好"}, {Role: agent.RoleAssistant, Content: "你好，有什么可以帮你？"}},
		UserText: "我还有几天年假？", Tools: tools}
	opts := agent.Options{Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	if _, err := agent.Run(ctx, benchModel{}, turn, opts); err != nil { // loads the tokenizer once
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := agent.Run(ctx, benchModel{}, turn, opts)
		if err != nil || res.StopReason != agent.StopFinished {
			b.Fatalf("Run = %q, %v", res.StopReason, err)
		}
	}
}

// BenchmarkRun_OneTurnNewText is the same turn with a user text and a tool
// answer never seen before, as in production: their tokens are counted
// afresh (the system prompt, tools block and history still hit the count
// cache, as they do from turn to turn of a deployment).
func BenchmarkRun_OneTurnNewText(b *testing.B) {
	var n int
	tools := []skills.Tool{&fakeTool{name: "hr_leave_balance", call: func(context.Context, json.RawMessage) (skills.Result, error) {
		return skills.Result{Status: 200, ContentType: "application/json",
			Body: fmt.Appendf(nil, `{"remaining_days":%d,"year":2026,"carry_over_until":"2027-03-31"}`, n)}, nil
	}}}
	turn := agent.Turn{SessionID: "s1", RunID: "r1", SystemPrompt: "你是公司的 HR/IT 助手，回答要简洁。", Tools: tools}
	opts := agent.Options{Logger: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	turn.UserText = "warm up"
	if _, err := agent.Run(ctx, benchModel{}, turn, opts); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		n++
		turn.UserText = fmt.Sprintf("我还有几天年假？第 %d 次问", n)
		if res, err := agent.Run(ctx, benchModel{}, turn, opts); err != nil || res.StopReason != agent.StopFinished {
			b.Fatalf("Run = %q, %v", res.StopReason, err)
		}
	}
}
