package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/skills"
)

func TestRun_OversizedJSONObservationStaysValid(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("orders", `{}`), answer("共 800 条订单。"))
	var b strings.Builder
	b.WriteString(`{"total":800,"orders":[`)
	for i := range 800 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"ORD-%05d","status":"shipped","items":[{"sku":"A","note":%q}]}`, i, strings.Repeat("备注", 40))
	}
	b.WriteString(`],"summary":"all shipped"}`)
	tools := []skills.Tool{&fakeTool{name: "orders", out: b.String(), contentType: "application/json"}}
	opts := testOptions()
	opts.MaxObservationBytes = 3000

	if _, err := agent.Run(context.Background(), m, testTurn("我的订单", tools), opts); err != nil {
		t.Fatalf("Run: %v", err)
	}
	obs := lastMessage(srv.Requests()[1]).Content
	if len(obs) > 3000 || !json.Valid([]byte(obs)) {
		t.Fatalf("observation of %d bytes, valid JSON %v: %.300s", len(obs), json.Valid([]byte(obs)), obs)
	}
	var doc struct {
		Total   int    `json:"total"`
		Orders  []any  `json:"orders"`
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(obs), &doc); err != nil || doc.Total != 800 || doc.Summary != "all shipped" || len(doc.Orders) == 0 {
		t.Errorf("shrunk observation lost its head or tail: %+v (%v)", doc, err)
	}
	if !strings.Contains(obs, "more items") {
		t.Errorf("observation does not say items were left out: %.300s", obs)
	}
}

func TestRun_RequiresFollowupThenResume(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("leave_history", `{}`))
	var log callLog
	tool := &fakeTool{name: "leave_history", log: &log,
		params: `{"type":"object","properties":{"year":{"type":"integer"}}}`,
		call: func(_ context.Context, args json.RawMessage) (skills.Result, error) {
			if !strings.Contains(string(args), "year") {
				return skills.Result{Status: 200, ContentType: "application/json",
					Body: []byte(`{"requires_followup": true, "question": "请问要查哪一年的休假记录？"}`)}, nil
			}
			return skills.Result{Status: 200, ContentType: "application/json", Body: []byte(`{"days_taken": 7}`)}, nil
		}}
	turn := testTurn("查一下我的休假记录", []skills.Tool{tool})

	first, err := agent.Run(context.Background(), m, turn, testOptions())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if first.StopReason != agent.StopNeedsInput || !errors.Is(first.Cause, agent.ErrNeedsInput) {
		t.Fatalf("stop = %q (%v), want %q", first.StopReason, first.Cause, agent.StopNeedsInput)
	}
	if first.Reply != "请问要查哪一年的休假记录？" || first.Continuation == nil {
		t.Fatalf("Reply = %q, Continuation = %v; want the backend's question and a continuation", first.Reply, first.Continuation)
	}

	// The gateway stores the continuation as JSON and brings it back with
	// the user's answer.
	stored, err := json.Marshal(first.Continuation)
	if err != nil {
		t.Fatalf("marshal continuation: %v", err)
	}
	var cont agent.Continuation
	if err := json.Unmarshal(stored, &cont); err != nil {
		t.Fatalf("unmarshal continuation: %v", err)
	}
	srv.Script(call("leave_history", `{"year": 2025}`), answer("2025 年你休了 7 天。"))
	resumed := turn
	resumed.UserText, resumed.Resume, resumed.RunID = "2025 年", &cont, "r2"
	second, err := agent.Run(context.Background(), m, resumed, testOptions())
	if err != nil || second.StopReason != agent.StopFinished || second.Reply != "2025 年你休了 7 天。" {
		t.Fatalf("resumed Run = %q %q, %v", second.StopReason, second.Reply, err)
	}
	if got, want := log.all(), []string{"leave_history {}", `leave_history {"year": 2025}`}; !slices.Equal(got, want) {
		t.Errorf("calls = %q, want %q", got, want)
	}
	// The same conversation goes on: the first run's messages, then the answer.
	reqs := srv.Requests()
	before, after := reqs[0].Messages, reqs[1].Messages
	if len(after) != len(before)+3 || after[0].Content != before[0].Content ||
		after[len(after)-1].Role != openai.ChatMessageRoleUser || after[len(after)-1].Content != "2025 年" {
		t.Errorf("resumed request = %d messages ending %+v; want the stored %d + call + question + answer",
			len(after), after[len(after)-1], len(before))
	}
	if n := second.Steps[0].N; n != 2 {
		t.Errorf("first step of the resumed run has N = %d, want 2 (counting on)", n)
	}
}

func TestRun_ConfirmStopsWithPendingConfirmation(t *testing.T) {
	srv, m := newModel(t)
	srv.Script(call("vpn_reset", `{"user": "zhangsan"}`), answer("never"))
	tools := []skills.Tool{&fakeTool{name: "vpn_reset", params: `{"type":"object","properties":{"user":{"type":"string"}}}`,
		call: func(context.Context, json.RawMessage) (skills.Result, error) {
			return skills.Result{Confirm: &skills.Confirmation{Prompt: "重置 zhangsan 的 VPN 密码"}}, nil
		}}}
	res, err := agent.Run(context.Background(), m, testTurn("帮我重置 VPN 密码", tools), testOptions())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.StopReason != agent.StopAwaitingConfirmation || !errors.Is(res.Cause, agent.ErrAwaitingConfirmation) {
		t.Fatalf("stop = %q (%v)", res.StopReason, res.Cause)
	}
	if res.Reply != "回复「确认」以执行：重置 zhangsan 的 VPN 密码" {
		t.Errorf("Reply = %q", res.Reply)
	}
	pc := res.PendingConfirmation
	if pc == nil || pc.Tool != "vpn_reset" || string(pc.Args) != `{"user": "zhangsan"}` || pc.Prompt != "重置 zhangsan 的 VPN 密码" {
		t.Errorf("PendingConfirmation = %+v", pc)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("model calls = %d, want 1", n)
	}
}
