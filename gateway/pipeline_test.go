package gateway_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// The pipeline tests go in through the gateway's Sink with the in-memory
// channel, as any platform package hands messages over.

// echoModel answers every message with "答：" and its text.
func echoModel(h *gatewaytest.Harness) {
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Content: "答：" + req.Messages[len(req.Messages)-1].Content}
	})
}

func accept(t *testing.T, gw *gateway.Gateway, in channels.Inbound) channels.Receipt {
	t.Helper()
	r, err := gw.Accept(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGroupMessagesNeedAMentionOrAPrefix(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	echoModel(h)
	ch := gatewaytest.Channel(2048)
	gw := h.StartExtra("groups:\n  prefixes: [\"/ai\"]\n  chats:\n    open-chat: {require_mention: false}\n",
		gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	if r := gatewaytest.Accept(t, gw, ch.Message("a", "g-1", "chat-1", "zhangsan", "大家好", true, false)); r.New || r.Answer {
		t.Fatalf("unaddressed group message: %+v, want nothing stored", r)
	}
	if r := gatewaytest.Accept(t, gw, ch.Message("a", "g-2", "chat-1", "zhangsan", "我还有几天年假？", true, true)); !r.New || !r.Answer {
		t.Fatalf("mentioned group message: %+v, want stored and answered", r)
	}
	gatewaytest.Accept(t, gw, ch.Message("a", "g-3", "chat-1", "lisi", "/ai 工资哪天发？", true, false))
	gatewaytest.Accept(t, gw, ch.Message("a", "g-4", "open-chat", "wangwu", "随便聊聊", true, false))
	gatewaytest.Accept(t, gw, ch.Message("a", "d-1", "zhangsan", "zhangsan", "私聊不用 @", false, false))
	if _, err := ch.WaitSent(ctx, 4); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	got := map[string]bool{}
	for _, out := range ch.Sent() {
		got[chantest.AddressOf(out).UserID+":"+out.Text] = true
	}
	for _, want := range []string{"zhangsan:答：我还有几天年假？", "lisi:答：工资哪天发？", "wangwu:答：随便聊聊", "zhangsan:答：私聊不用 @"} {
		if !got[want] {
			t.Errorf("missing reply %q; sent %v", want, got)
		}
	}
	if n := len(ch.Sent()); n != 4 {
		t.Errorf("sent %d replies, want 4", n)
	}
	if n := h.Count(`SELECT count(*) FROM inbound_messages WHERE platform_msg_id = 'g-1'`); n != 0 {
		t.Errorf("the unaddressed group message was stored")
	}
}

func TestResetAndHelpCommands(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	echoModel(h)
	ch := gatewaytest.Channel(4096)
	gw := h.Start(gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	send := func(id, text string, n int) string {
		t.Helper()
		gatewaytest.Accept(t, gw, ch.Message("a", id, "zhangsan", "zhangsan", text, false, false))
		sent, err := ch.WaitSent(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return sent[n-1].Text
	}

	send("c-1", "第一个问题", 1)
	if got := send("c-2", "/help", 2); !strings.Contains(got, "年假余额") || strings.Contains(got, "只能查询提问者本人") {
		t.Errorf("/help answered %q, want the skills zhangsan may use", got)
	}
	if got := send("c-3", "帮助", 3); !strings.HasPrefix(got, "我可以帮你") {
		t.Errorf("帮助 answered %q", got)
	}
	if got := send("c-4", "/frobnicate now", 4); !strings.Contains(got, "/frobnicate") || !strings.Contains(got, "/help") {
		t.Errorf("unknown command answered %q", got)
	}
	if got := send("c-5", "/reset", 5); got != config.DefaultMessages.Reset {
		t.Errorf("/reset answered %q", got)
	}
	send("c-6", "新的问题", 6)
	reqs := h.Model.Requests()
	last := reqs[len(reqs)-1]
	for _, m := range last.Messages {
		if strings.Contains(m.Content, "第一个问题") {
			t.Fatalf("after /reset the model still saw %q", m.Content)
		}
	}
	if len(reqs) != 2 {
		t.Errorf("model calls = %d, want 2 (commands never reach the model)", len(reqs))
	}
}

// A reply of 10,000 Chinese characters arrives whole, in order, in parts
// within the channel's limit, each valid UTF-8, with code fences closed.
func TestLongReplyArrivesWholeAndInOrder(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var b strings.Builder
	for i := 0; utf8.RuneCountInString(b.String()) < 10000; i++ {
		fmt.Fprintf(&b, "第%d段：员工手册规定年假按工龄计算，满一年五天，满十年十天，满二十年十五天。", i)
		if i%7 == 6 {
			b.WriteString("\n\n")
		}
		if i == 40 {
			b.WriteString("\n```json\n{\"年假\": 5,\n \"病假\": 10}\n```\n")
		}
	}
	long := b.String()
	h.Model.Script(openaitest.Reply{Content: long})
	ch := gatewaytest.Channel(2048)
	gw := h.Start(gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	gatewaytest.Accept(t, gw, ch.Message("a", "long-1", "zhangsan", "zhangsan", "把员工手册的年假部分发我", false, false))
	h.WaitIdle(ctx)
	sent := ch.Sent()
	if len(sent) < 15 {
		t.Fatalf("%d parts for %d bytes, want at least 15", len(sent), len(long))
	}
	var joined strings.Builder
	for i, out := range sent {
		if len(out.Text) > 2048 || !utf8.ValidString(out.Text) {
			t.Fatalf("part %d: %d bytes, valid UTF-8 %v", i, len(out.Text), utf8.ValidString(out.Text))
		}
		if strings.Count(out.Text, "```")%2 != 0 {
			t.Fatalf("part %d leaves a code fence open:\n%s", i, out.Text)
		}
		if out.Part != i || out.Parts != len(sent) {
			t.Fatalf("part %d says %d of %d", i, out.Part, out.Parts)
		}
		joined.WriteString(out.Text)
	}
	strip := func(s string) string {
		s = strings.ReplaceAll(s, "```json", "")
		s = strings.ReplaceAll(s, "```", "")
		return strings.Join(strings.Fields(s), "")
	}
	if strip(joined.String()) != strip(long) {
		t.Fatal("the parts do not join to the reply")
	}
}

// 20 users write 5 messages each, sent alternately to two replicas; the
// platform answers sends with jitter. Each user's replies arrive in the
// order of their messages.
func TestRepliesInOrderAcrossTwoReplicas(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h := gatewaytest.New(t)
	echoModel(h)
	ch := gatewaytest.Channel(2048)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	ch.FailWith(func(channels.Outbound) error {
		mu.Lock()
		d := time.Duration(rng.IntN(3)) * time.Millisecond
		mu.Unlock()
		time.Sleep(d) // platform latency, not synchronisation
		return nil
	})
	replicas := []*gateway.Gateway{
		h.Start(gateway.Deps{Channels: []channels.Channel{ch}}),
		h.Start(gateway.Deps{Channels: []channels.Channel{ch}}),
	}
	ctx := gatewaytest.WithTimeout(t, 90*time.Second)
	const users, each = 20, 5
	for m := range each {
		for u := range users {
			user := fmt.Sprintf("user%02d", u)
			gatewaytest.Accept(t, replicas[(u+m)%2], ch.Message("a", fmt.Sprintf("%s-%d", user, m), user, user, fmt.Sprintf("问题%d", m), false, false))
		}
	}
	if _, err := ch.WaitSent(ctx, users*each); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	for u, texts := range textsByUser(ch.Sent()) {
		for i, text := range texts {
			if want := fmt.Sprintf("答：问题%d", i); text != want {
				t.Fatalf("%s's reply %d is %q, want %q (all: %q)", u, i, text, want, texts)
			}
		}
	}
	if n := len(ch.Sent()); n != users*each {
		t.Fatalf("sent %d replies, want %d", n, users*each)
	}
}

// A run that takes long sends 「处理中…」 once, before the answer, on a
// channel that cannot show progress.
func TestSlowRunGetsOneProcessingHint(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	ch := gatewaytest.Channel(2048)
	ctxWait := gatewaytest.WithTimeout(t, 30*time.Second)
	h.Model.Script(openaitest.Reply{Content: "查好了", Hook: func(ctx context.Context) error {
		_, err := ch.WaitSent(ctx, 1) // the model answers once the hint is out
		return err
	}})
	gw := h.StartExtra("worker:\n  processing_hint_after: 50ms\n", gateway.Deps{Channels: []channels.Channel{ch}})
	gatewaytest.Accept(t, gw, ch.Message("a", "slow-1", "zhangsan", "zhangsan", "查一下", false, false))
	sent, err := ch.WaitSent(ctxWait, 2)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctxWait)
	if len(ch.Sent()) != 2 || sent[0].Text != config.DefaultMessages.Processing || sent[1].Text != "查好了" {
		t.Fatalf("sent %+v, want the hint then the answer", ch.Sent())
	}
}

// A streaming channel reads the run's answer with Progress; once a stream
// showed the first part (Shown), only the parts after it are delivered.
// Meanwhile the delivery layer holds the first part back (the platform
// polls: a LiveDeadline without a LiveInterval).
func TestStreamShowsFirstPartAndDeliveryTheRest(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	long := strings.Repeat("这是一段很长的回答。", 100) // 3,000 bytes: two parts of 2,048
	h.Model.Script(openaitest.Reply{Content: long})
	ch := chantest.New("test", channels.Limits{MaxBytes: 2048, Format: channels.FormatMarkdown, Streams: true, LiveDeadline: time.Hour})
	gw := h.Start(gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	in := ch.Message("a", "st-1", "zhangsan", "zhangsan", "讲讲制度", false, false)
	gatewaytest.Accept(t, gw, in)
	ref := channels.MessageRef{Channel: "test", Account: "a", MsgID: "st-1"}
	var p channels.Progress
	for !p.Done { // the refresh callbacks of a platform, as fast as it likes
		var err error
		if p, err = gw.Progress(ctx, ref); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("never done")
		}
	}
	if !p.Known || !p.More || len(p.Text) > 2048 || !strings.HasPrefix(long, p.Text) || p.Shown {
		t.Fatalf("progress %+v", p)
	}
	// The delivery looks at the answer before the stream shows it.
	gatewaytest.WaitFor(t, ctx, func() bool {
		return h.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.deliver_reply' AND attempted_at IS NOT NULL`) > 0
	})
	if len(ch.Sent()) != 0 {
		t.Fatal("a part went out before the stream showed the first")
	}
	if err := gw.Shown(ctx, ref); err != nil {
		t.Fatal(err)
	}
	sent, err := ch.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0].Part != 1 || p.Text+sent[0].Text != long {
		t.Fatalf("after Shown sent %+v, want only the second part", sent)
	}
	if p, _ := gw.Progress(ctx, ref); !p.Shown {
		t.Fatal("progress does not say the first part was shown")
	}
	if p, _ := gw.Progress(ctx, channels.MessageRef{Channel: "test", Account: "a", MsgID: "nope"}); p.Known {
		t.Fatal("an unknown message has progress")
	}
}
