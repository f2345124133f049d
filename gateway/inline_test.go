package gateway_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store"
)

// A replica sends the answer it committed itself: no delivery job is
// queued for it, and its parts leave the inline index once delivered.
func TestAnswerIsSentByItsReplicaWithoutADeliveryJob(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	echoModel(h)
	ch := gatewaytest.Channel(2048)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	inbox := h.Start(gateway.Deps{Channels: []channels.Channel{ch}})
	gatewaytest.Accept(t, inbox, ch.Message("a", "inline-1", "zhangsan", "zhangsan", "我还有几天年假？", false, false))
	if _, err := ch.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if got := replies(ch.Sent()); len(got) != 1 || got[0].Text != "答：我还有几天年假？" || got[0].Attempt != 0 {
		t.Fatalf("sent %+v, want one answer, a first attempt", got)
	}
	// Its attempt was recorded with the part, not in a write of its own.
	if n := h.Count(`SELECT count(*) FROM outbox WHERE attempts = 1 AND first_attempt_at IS NOT NULL`); n != 1 {
		t.Fatalf("%d parts with their one attempt recorded, want 1", n)
	}
	if n := h.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.deliver_reply'`); n != 0 {
		t.Fatalf("%d delivery jobs, want the answer sent without one", n)
	}
	if n := h.Count(`SELECT count(*) FROM outbox WHERE inline_until IS NOT NULL OR delivered_at IS NULL`); n != 0 {
		t.Fatalf("%d parts still in flight or undelivered", n)
	}
}

// A replica that committed an answer and died before sending it leaves
// parts in flight: once their time has run out, another replica's lease
// sweep hands them to a delivery job, and the answer goes out once.
func TestAnswerLeftUnsentByADeadReplicaGoesOutOnce(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ch := gatewaytest.Channel(2048)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)

	// What the dead replica's commit left: the parts, in flight for 10 s.
	until := clock().Add(10 * time.Second)
	if _, err := store.InsertOutbox(ctx, h.Pool, store.Reply{Key: "inbound:1", Channel: ch.Name(), Account: "a",
		OrderKey: ch.Name() + "/a/zhangsan", Format: channels.FormatText, Parts: []string{"答：你还有 5 天年假。"},
		InlineUntil: &until, InlineFrom: clock()}); err != nil {
		t.Fatal(err)
	}
	live := h.Start(gateway.Deps{Channels: []channels.Channel{ch}, Now: clock})
	if n, err := live.SweepLeases(ctx); err != nil || n != 0 {
		t.Fatalf("sweep while the parts' time runs took %d (%v), want 0", n, err)
	}
	if n := len(ch.Sent()); n != 0 {
		t.Fatalf("%d sends while the dead replica still owned the answer", n)
	}
	mu.Lock()
	now = now.Add(11 * time.Second)
	mu.Unlock()
	if n, err := live.SweepLeases(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after the time ran out took %d (%v), want the reply", n, err)
	}
	if _, err := ch.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if n, err := live.SweepLeases(ctx); err != nil || n != 0 {
		t.Fatalf("a second sweep took %d (%v), want 0", n, err)
	}
	h.WaitIdle(ctx)
	// The dead replica may have sent it before dying: the job's send says
	// so (a second attempt), for the platform's duplicate check.
	if got := ch.Sent(); len(got) != 1 || got[0].Text != "答：你还有 5 天年假。" || got[0].Attempt != 1 {
		t.Fatalf("sent %+v, want the answer once, as a second attempt", got)
	}
}

// An answer whose inline send finds its conversation busy goes to a
// delivery job as a first attempt: it never reached the platform, so the
// job sends it without the platform's duplicate check. (Sent as a second
// attempt, WeCom's check dropped an answer whose words the user had just
// got: two "好的" in a row, the second never shown.)
func TestInlineSendFoundBusyStaysAFirstAttempt(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	echoModel(h)
	ch := gatewaytest.Channel(2048)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	inbox := h.Start(gateway.Deps{Channels: []channels.Channel{ch}})
	// Another delivery of the conversation holds its lock.
	lock, ok, err := store.TryLock(ctx, h.Pool, "deliver:"+ch.Name()+"/a/zhangsan")
	if err != nil || !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	gatewaytest.Accept(t, inbox, ch.Message("a", "busy-1", "zhangsan", "zhangsan", "好的吗", false, false))
	gatewaytest.WaitFor(t, ctx, func() bool {
		return h.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.deliver_reply'`) == 1
	})
	lock.Unlock(ctx)
	sent, err := ch.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Attempt != 0 {
		t.Errorf("the job sent attempt %d, want the first (0): the inline send never reached the platform", sent[0].Attempt)
	}
	if n := h.Count(`SELECT attempts FROM outbox`); n != 1 {
		t.Errorf("attempts recorded = %d, want 1", n)
	}
}
