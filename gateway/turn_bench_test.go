package gateway

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

// instantModel calls hr_leave_balance once, then answers: a two-step turn
// with no model latency, so the benchmark sees only Hermes' own work.
type instantModel struct{}

func (instantModel) Chat(_ context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	finish := openai.FinishReasonStop
	if last := req.Messages[len(req.Messages)-1]; last.Role == openai.ChatMessageRoleTool {
		msg.Content = "你还有 5 天年假。"
	} else {
		msg.ToolCalls = []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "hr_leave_balance", Arguments: "{}"}}}
		finish = openai.FinishReasonToolCalls
	}
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: finish}},
		Usage: openai.Usage{PromptTokens: 100, CompletionTokens: 10}}, nil
}

// nullChannel delivers instantly.
type nullChannel struct{}

func (nullChannel) Name() string { return "bench" }
func (nullChannel) Limits(string) channels.Limits {
	return channels.Limits{MaxBytes: 2048, Format: channels.FormatText}
}
func (nullChannel) Send(context.Context, channels.Outbound) (channels.SendResult, error) {
	return channels.SendResult{MessageID: "m"}, nil
}

// BenchmarkTurn is one whole turn minus the network: store the inbound
// message and its job, run the agent (model and skill backend local and
// instant), commit trace, history and outbox, deliver. It measures the
// gateway's own overhead per turn, Postgres writes included.
//
//	go test -run '^$' -bench Turn -benchmem ./gateway/
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	pool, err := store.Open(ctx, storetest.URL(b), 30)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	backend := httptest.NewServer(demobackend.New([]byte("bench-key"), nil))
	defer backend.Close()
	os.Setenv(skills.SampleHRKeyEnv, "bench-key")
	os.Setenv(skills.SampleITKeyEnv, "bench-key")

	cfg := &config.Config{}
	cfg.Database.URL = "unused"
	cfg.Model.Provider = "offline"
	cfg.Skills = config.SkillsConfig{Dir: "../skills/samples", BaseURL: backend.URL}
	cfg.ApplyDefaults()
	g, err := New(ctx, cfg, Deps{Pool: pool, Model: instantModel{}, Channels: []channels.Channel{nullChannel{}},
		Queues: map[string]int{}, Partial: true, Logger: testLoggerDiscard()})
	if err != nil {
		b.Fatal(err)
	}
	process, deliver := &processWorker{rn: &g.runner}, &deliverWorker{d: &g.delivery, live: &g.live}
	job := &rivertype.JobRow{Attempt: 1, MaxAttempts: agentAttempts}

	turn := func(i int) {
		in := channels.Inbound{Channel: "bench", Account: "a", MsgID: fmt.Sprint(i), MsgType: channels.TypeText,
			ChatID: fmt.Sprintf("u%d", i%20), ChatType: channels.ChatSingle,
			Sender: channels.Identity{UserID: "zhangsan", CorpID: "c"}, Text: "我还有几天年假？",
			ReplyTo: []byte(`{"to_user":"zhangsan"}`)}
		if _, err := g.Accept(ctx, in); err != nil {
			b.Fatal(err)
		}
		var id int64
		if err := pool.QueryRow(ctx, `SELECT id FROM inbound_messages WHERE platform_msg_id = $1`, in.MsgID).Scan(&id); err != nil {
			b.Fatal(err)
		}
		if err := process.Work(ctx, &river.Job[ProcessInboundArgs]{JobRow: job, Args: ProcessInboundArgs{InboundID: id}}); err != nil {
			b.Fatal(err)
		}
		if err := deliver.Work(ctx, &river.Job[DeliverReplyArgs]{JobRow: job, Args: DeliverReplyArgs{ReplyKey: fmt.Sprintf("inbound:%d", id)}}); err != nil {
			b.Fatal(err)
		}
	}
	turn(-1) // warm up: the tokenizer loads once per process (~0.2 s)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		turn(i)
	}
	b.StopTimer()
	var delivered int
	_ = pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE delivered_at IS NOT NULL`).Scan(&delivered)
	if delivered != b.N+1 {
		b.Fatalf("delivered %d of %d", delivered, b.N)
	}
}
