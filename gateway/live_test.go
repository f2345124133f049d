package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Live replies the gateway drives (channels.RunLive): a channel that
// pushes its own, the hold on the answer's first part meanwhile, and what
// becomes of that hold when the live reply ends or its replica dies.

// liveChannel is the in-memory channel with a live reply of its own: it
// records what the live reply showed, and Send records the rest.
type liveChannel struct {
	*chantest.Channel
	openErr error
	// finishGate, when set, makes Finish wait for it to close.
	finishGate chan struct{}

	mu     sync.Mutex
	opened int
	shows  []string // every Update, then the Finish or Abandon as "finish:" / "abandon:"
	wake   chan struct{}
}

func newLiveChannel(limits channels.Limits) *liveChannel {
	limits.Streams, limits.LiveInterval = true, 10*time.Millisecond
	return &liveChannel{Channel: chantest.New("test", limits), wake: make(chan struct{})}
}

func (c *liveChannel) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == "" {
		c.opened++
	} else {
		c.shows = append(c.shows, s)
	}
	close(c.wake)
	c.wake = make(chan struct{})
}

func (c *liveChannel) Open(_ context.Context, out channels.Outbound) (channels.Live, error) {
	if c.openErr != nil {
		return nil, c.openErr
	}
	c.note("")
	return liveReply{c}, nil
}

// waitFor waits until cond holds of the opens and shows.
func (c *liveChannel) waitFor(ctx context.Context, t *testing.T, cond func(opened int, shows []string) bool) {
	t.Helper()
	for {
		c.mu.Lock()
		ok, wake := cond(c.opened, c.shows), c.wake
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("live reply: %d opened, shows %q", c.opened, c.shows)
		case <-wake:
		}
	}
}

type liveReply struct{ c *liveChannel }

func (l liveReply) Update(_ context.Context, soFar string) error { l.c.note(soFar); return nil }
func (l liveReply) Finish(ctx context.Context, final channels.Outbound) (channels.SendResult, error) {
	if l.c.finishGate != nil {
		select {
		case <-l.c.finishGate:
		case <-ctx.Done():
			return channels.SendResult{}, ctx.Err()
		}
	}
	l.c.note("finish:" + final.Text)
	return channels.SendResult{}, nil
}
func (l liveReply) Abandon(_ context.Context, text string) error {
	l.c.note("abandon:" + text)
	return nil
}

func finished(_ int, shows []string) bool {
	return len(shows) > 0 && strings.HasPrefix(shows[len(shows)-1], "finish:")
}

// heldUntil is the latest hold's end (zero without one).
func heldUntil(h *gatewaytest.Harness) time.Time {
	var until *time.Time
	if err := h.Pool.QueryRow(context.Background(), `SELECT max(held_until) FROM live_holds`).Scan(&until); err != nil || until == nil {
		return time.Time{}
	}
	return *until
}

// snapshot returns the live replies opened and what they showed.
func (c *liveChannel) snapshot() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened, append([]string(nil), c.shows...)
}

// The live reply shows the answer; while it runs, the first part is held
// back however long the run takes (the hold is renewed, a lease term at a
// time), and only the parts after it are delivered.
func TestLiveReplyShowsTheFirstPart(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	long := strings.Repeat("这是一段很长的回答。", 100) // 3,000 bytes: two parts of 2,048
	release := make(chan struct{})
	h.Model.Script(openaitest.Reply{Content: long, Hook: func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}})
	ch := newLiveChannel(channels.Limits{MaxBytes: 2048, Format: channels.FormatMarkdown, LiveDeadline: time.Hour})
	ch.finishGate = make(chan struct{})
	gw := h.StartExtra("worker:\n  run_lease: 1s\n", gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	gatewaytest.Accept(t, gw, ch.Message("a", "live-1", "zhangsan", "zhangsan", "讲讲制度", false, false))
	ch.waitFor(ctx, t, func(opened int, _ []string) bool { return opened == 1 })

	// Past the hold's first term, renewed, it still holds the part.
	first := heldUntil(h)
	gatewaytest.WaitFor(t, ctx, func() bool { return time.Now().After(first) && heldUntil(h).After(first) })
	close(release)
	// The delivery looks at the answer (and holds its first part) before
	// the live reply shows it.
	gatewaytest.WaitFor(t, ctx, func() bool {
		return h.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.deliver_reply' AND attempted_at IS NOT NULL`) > 0
	})
	close(ch.finishGate)
	ch.waitFor(ctx, t, finished)
	sent, err := ch.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	_, shows := ch.snapshot()
	final := strings.TrimPrefix(shows[len(shows)-1], "finish:")
	if len(ch.Sent()) != 1 || sent[0].Part != 1 || final+sent[0].Text != long {
		t.Fatalf("sent %d parts (first: part %d), the live reply finished with %d bytes: want it to show part 0, Send part 1",
			len(ch.Sent()), sent[0].Part, len(final))
	}
	if n := h.Count(`SELECT count(*) FROM outbox WHERE part = 0 AND platform_msg_id = 'stream' AND delivered_at IS NOT NULL`); n != 1 {
		t.Fatalf("first parts recorded shown: %d, want 1", n)
	}
	if n := h.Count(`SELECT count(*) FROM live_holds`); n != 0 {
		t.Fatalf("%d holds left", n)
	}
}

// A live reply that cannot open holds nothing back: the answer goes as a
// message as soon as it is written, not after a hold's term.
func TestLiveReplyThatCannotOpenSendsAtOnce(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.Script(openaitest.Reply{Content: "查好了"})
	ch := newLiveChannel(channels.Limits{MaxBytes: 2048, Format: channels.FormatMarkdown, LiveDeadline: time.Hour})
	ch.openErr = errors.New("card refused")
	gw := h.StartExtra("worker:\n  run_lease: 1h\n", gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	gatewaytest.Accept(t, gw, ch.Message("a", "live-2", "zhangsan", "zhangsan", "查一下", false, false))
	sent, err := ch.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Part != 0 || sent[0].Text != "查好了" {
		t.Fatalf("sent %+v, want the answer", sent)
	}
}

// A repeat of a message (the platform retrying) opens no second live
// reply: the one the first delivery started shows the answer.
func TestLiveReplyOncePerMessage(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.Script(openaitest.Reply{Content: "好"})
	ch := newLiveChannel(channels.Limits{MaxBytes: 2048, Format: channels.FormatMarkdown, LiveDeadline: time.Hour})
	gw := h.Start(gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	in := ch.Message("a", "live-3", "zhangsan", "zhangsan", "hi", false, false)
	if r := gatewaytest.Accept(t, gw, in); !r.New {
		t.Fatalf("first delivery %+v", r)
	}
	if r := gatewaytest.Accept(t, gw, in); r.New || !r.Answer {
		t.Fatalf("repeat %+v", r)
	}
	ch.waitFor(ctx, t, finished)
	h.WaitIdle(ctx)
	if opened, _ := ch.snapshot(); opened != 1 || len(ch.Sent()) != 0 {
		t.Fatalf("%d live replies opened, %d parts sent; want one live reply showing the answer", opened, len(ch.Sent()))
	}
}

// A replica that dies while its live reply runs renews its hold no more:
// another replica delivers the first part once the hold's term lapses,
// not at the live reply's deadline (an hour here).
func TestLiveReplyOfADeadReplicaIsDelivered(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	release := make(chan struct{})
	h.Model.Script(openaitest.Reply{Content: "答：第二个问题", Hook: func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}})
	limits := channels.Limits{MaxBytes: 2048, Format: channels.FormatMarkdown, LiveDeadline: time.Hour}
	extra := "worker:\n  run_lease: 1s\n"

	// Replica A takes the message and opens its live reply, then loses
	// Postgres (as a dead replica does) before the answer is there.
	poolA, err := store.Open(context.Background(), h.DBURL, 10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(poolA.Close)
	chA := newLiveChannel(limits)
	a := h.StartExtra(extra, gateway.Deps{Pool: poolA, Channels: []channels.Channel{chA}, Queues: map[string]int{}, Partial: true})
	// Replica B works the jobs.
	chB := newLiveChannel(limits)
	h.StartExtra(extra, gateway.Deps{Channels: []channels.Channel{chB}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	gatewaytest.Accept(t, a, chA.Message("a", "live-4", "lisi", "lisi", "第二个问题", false, false))
	chA.waitFor(ctx, t, func(opened int, _ []string) bool { return opened == 1 })
	poolA.Close()
	close(release)

	sent, err := chB.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Part != 0 || sent[0].Text != "答：第二个问题" {
		t.Fatalf("sent %+v, want the answer", sent)
	}
	h.WaitIdle(ctx)
	if n := h.Count(`SELECT count(*) FROM live_holds`); n != 0 || len(chB.Sent()) != 1 {
		t.Fatalf("%d holds left, %d parts sent; want none and one", n, len(chB.Sent()))
	}
}

// TestDeliveryWaitsForTheLiveReplyRunningHere: on a long connection the
// answer's delivery job finds its first part held for the stream; the
// stream runs on this replica, so the job waits for it to end and
// completes, instead of snoozing to look again 5 s later (which had every
// streamed answer's job linger in the queue).
func TestDeliveryWaitsForTheLiveReplyRunningHere(t *testing.T) {
	t.Parallel()
	r := gatewaytest.NewBotRig(t, "")
	for i := range 3 {
		m := wecomtest.BotMessage{MsgID: fmt.Sprint("lw-", i), AIBotID: wsBotID, ChatID: "zhangsan", ChatType: "single", UserID: "zhangsan"}
		if got := r.Ask(t, m.Text("你好")); got != "收到" {
			t.Fatalf("answer %q", got)
		}
	}
	if n := r.H.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.deliver_reply'`); n < 3 {
		t.Fatalf("%d delivery jobs, want one per answer", n)
	}
	if n := r.H.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.deliver_reply' AND metadata ? 'snoozes'`); n != 0 {
		t.Errorf("%d delivery jobs snoozed on the hold, want none", n)
	}
}
