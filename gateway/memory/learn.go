package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Learning budget: one model call per message that states something about
// the user, answered within extractTimeout and extractMaxTokens, of which
// at most maxProposals memories of MaxTextBytes each are kept.
const (
	learnAttempts    = 2
	extractTimeout   = 30 * time.Second
	extractMaxTokens = 300
	maxProposals     = 3
	maxProposalBytes = 4 << 10
)

// LearnArgs is the job that learns from one answered message.
type LearnArgs struct {
	InboundID int64  `json:"inbound_id"`
	RunID     string `json:"run_id"`
}

// Kind implements river.JobArgs (stored with every job: never rename it).
func (LearnArgs) Kind() string { return "hermes.learn_memories" }

type learnWorker struct {
	river.WorkerDefaults[LearnArgs]
	m *Service
}

// Work keeps the outcome of a confirmed write as it was told to the user,
// or asks the model what the user's message states about them.
func (w *learnWorker) Work(ctx context.Context, job *river.Job[LearnArgs]) error {
	m := w.m
	row, err := store.GetInbound(ctx, m.s.Pool, job.Args.InboundID)
	if err != nil {
		return err
	}
	run, err := store.GetRun(ctx, m.s.Pool, job.Args.RunID)
	if err != nil {
		return err
	}
	owner, source := ownerOf(row.In), "run:"+run.ID
	if run.StopReason == gateway.StopConfirmed {
		return m.keepOutcome(ctx, owner, run, source)
	}
	if !*m.cfg().Extract || !statesSomething(row.In.Text) {
		return nil
	}
	proposals, err := m.extract(ctx, row.In.Text)
	if err != nil {
		m.log().Warn("nothing learned from the message", "inbound_id", row.ID, "run_id", run.ID, "err", err)
		return nil // a model's bad answer is not worth a retry
	}
	var kept []string
	for _, p := range proposals {
		if err := m.store(ctx, owner, Memory{Kind: p.kind, Text: p.text, Source: source}); err != nil {
			return err
		}
		kept = append(kept, p.text)
	}
	return m.sayLearned(ctx, row, kept)
}

// sayLearned tells the user, in one short line after the answer, what was
// kept from their message and how to undo it: learning is never silent.
// The line goes to the chat the message came from as a message of its own
// (the answer's reply address may take one reply only, as a WeCom AI
// bot's response_url does), so only where the channel can send there
// unprompted; elsewhere /memory shows it. Keyed by the message, so a retry
// queues it once.
func (m *Service) sayLearned(ctx context.Context, row store.InboundRow, kept []string) error {
	if len(kept) == 0 {
		return nil
	}
	chatID := row.In.ChatID
	if row.In.ChatType != channels.ChatGroup {
		chatID = row.In.Sender.UserID
	}
	to, ok := m.pushAddress(ctx, row.In, row.In.ChatType, chatID)
	if !ok {
		return nil
	}
	line := fmt.Sprintf(m.words().Learned, strings.Join(kept, "；"))
	return store.InTx(ctx, m.s.Pool, func(tx pgx.Tx) error {
		_, err := m.s.Outbox.Queue(ctx, tx, learnedKeyPrefix+strconv.FormatInt(row.ID, 10), to, line)
		return err
	})
}

// learnedKeyPrefix starts the reply key of the line saying what was
// learned from a message; the rest is its inbound id.
const learnedKeyPrefix = "learned:"

// keepOutcome keeps a confirmed write that succeeded: its date and what
// the user was told ("2026-12-01 已执行：VPN 申请已提交，单号 VPN-1001").
// A failed one, or one whose words the masking would change, is not kept.
func (m *Service) keepOutcome(ctx context.Context, o Owner, run store.RunRecord, source string) error {
	steps, err := store.GetRunSteps(ctx, m.s.Pool, run.ID)
	if err != nil {
		return err
	}
	if len(steps) == 0 || steps[0].Error != "" {
		return nil
	}
	text := outcomeText(run.FinishedAt.Local().Format("2006-01-02"), run.Reply, steps[0].Observation)
	if !storable(text) {
		return nil
	}
	return m.store(ctx, o, Memory{Kind: KindOutcome, Text: channels.TruncateUTF8(text, MaxTextBytes), Source: source})
}

// extractPrompt asks for durable facts and preferences the user stated,
// never what a system answered (balances, statuses go stale).
const extractPrompt = `你负责为企业助手整理"用户备注"。下面是一位员工发给助手的一条消息。
只提取这位员工明确陈述的、长期有效的关于他本人的事实或偏好（例如：办公地点、称呼、负责的业务、常用设备、沟通偏好）。
不要提取：问题本身、一次性的请求、余额/状态/进度等会过时的数据、任何密码验证码或证件号手机号、关于其他人的信息。
用第三人称简短写出，每条不超过 60 个字。没有可提取的内容时返回空列表。
kind 写 "preference"（他希望助手怎样回答他：语言、长短、格式、称呼）或 "fact"（其他关于他本人的事实）。
只输出 JSON：{"memories":[{"text":"...","kind":"fact"}]}`

// proposal is one memory the extraction proposed.
type proposal struct {
	text string
	kind Kind
}

// extract asks the model what text states about its writer. Its answer is
// held to the schema: an unknown field, more than maxProposals, an
// oversized or unstorable text fails the whole answer, and nothing is kept.
func (m *Service) extract(ctx context.Context, text string) ([]proposal, error) {
	ctx, cancel := context.WithTimeout(ctx, extractTimeout)
	defer cancel()
	resp, err := m.s.Agent.Model().Chat(ctx, openai.ChatCompletionRequest{
		Model: m.s.Config.Model.Name, MaxTokens: extractMaxTokens, Temperature: 0,
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: extractPrompt},
			{Role: openai.ChatMessageRoleUser, Content: agent.MaskedText(channels.TruncateUTF8(text, 2000))},
		},
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 {
		return nil, errors.New("memory: extraction answered nothing")
	}
	return parseProposal(resp.Choices[0].Message.Content)
}

// parseProposal validates the model's proposal strictly. A proposal
// without a kind is a preference when it says how to answer (kindOf).
func parseProposal(content string) ([]proposal, error) {
	if len(content) > maxProposalBytes {
		return nil, fmt.Errorf("memory: proposal of %d bytes, over %d", len(content), maxProposalBytes)
	}
	content = strings.TrimSpace(content)
	content = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(content, "```json"), "```"), "```")
	var p struct {
		Memories []struct {
			Text string `json:"text"`
			Kind Kind   `json:"kind"`
		} `json:"memories"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(content)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("memory: proposal: %w", err)
	}
	if dec.More() {
		return nil, errors.New("memory: proposal: trailing data")
	}
	if len(p.Memories) > maxProposals {
		return nil, fmt.Errorf("memory: %d proposals, at most %d", len(p.Memories), maxProposals)
	}
	out := make([]proposal, 0, len(p.Memories))
	for _, mem := range p.Memories {
		t := strings.TrimSpace(mem.Text)
		switch {
		case t == "" || len(t) > MaxTextBytes:
			return nil, fmt.Errorf("memory: proposal of %d bytes: %w", len(t), ErrTooLong)
		case !storable(t):
			return nil, errNotStorable
		case mem.Kind != "" && mem.Kind != KindFact && mem.Kind != KindPreference:
			return nil, fmt.Errorf("memory: proposal of kind %q: %w", mem.Kind, ErrBadKind)
		}
		kind := mem.Kind
		if kind == "" {
			kind = kindOf(t)
		}
		out = append(out, proposal{text: t, kind: kind})
	}
	return out, nil
}
