package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// A live hold holds the first part of its message's answer only: not the
// answer's later parts, not another reply to the same conversation (an
// async result); it is renewed up to its deadline and dropped with the
// live reply.
func TestLiveHolds(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	in := channels.Inbound{Channel: "wecom", Account: "bot", MsgID: "m1", MsgType: "text", ChatID: "u", ChatType: "single",
		Sender: channels.Identity{UserID: "u"}, Text: "hi"}
	hold := store.Hold{Until: t0.Add(time.Second), ClosesAt: t0.Add(time.Minute)}
	id, inserted, err := store.InsertInboundHeld(ctx, pool, in, store.InboundPending, hold)
	if err != nil || !inserted {
		t.Fatalf("insert: inserted=%v err=%v", inserted, err)
	}
	// A repeat stores nothing, its hold neither.
	if _, inserted, err := store.InsertInboundHeld(ctx, pool, in, store.InboundPending, store.Hold{Until: t0.Add(time.Hour), ClosesAt: t0.Add(time.Hour)}); err != nil || inserted {
		t.Fatalf("repeat: inserted=%v err=%v", inserted, err)
	}
	answer := store.AnswerKey(id)
	for _, r := range []store.Reply{
		{Key: answer, Channel: "wecom", Account: "bot", OrderKey: "wecom/bot/u", Format: channels.FormatMarkdown, Parts: []string{"一", "二"}},
		{Key: "async:1", Channel: "wecom", Account: "bot", OrderKey: "wecom/bot/u", Format: channels.FormatMarkdown, Parts: []string{"结果"}},
	} {
		if _, err := store.InsertOutbox(ctx, pool, r); err != nil {
			t.Fatal(err)
		}
	}
	held := func() map[string]time.Time {
		t.Helper()
		parts, err := store.UndeliveredInOrder(ctx, pool, "wecom/bot/u", "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, p := range parts {
			if p.HeldUntil != nil {
				out[p.ReplyKey+"/"+string(rune('0'+p.Part))] = *p.HeldUntil
			}
		}
		return out
	}
	if got := held(); len(got) != 1 || !got[answer+"/0"].Equal(hold.Until) {
		t.Fatalf("held %v, want only %s/0 until %s", got, answer, hold.Until)
	}
	// Renewed, never past its deadline.
	if err := store.RenewHolds(ctx, pool, []string{answer}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := held(); !got[answer+"/0"].Equal(hold.ClosesAt) {
		t.Fatalf("renewed to %s, want capped at %s", got[answer+"/0"], hold.ClosesAt)
	}
	waiting, err := store.DropHold(ctx, pool, answer)
	if err != nil || !waiting {
		t.Fatalf("DropHold = %v, %v; want the first part waiting", waiting, err)
	}
	if got := held(); len(got) != 0 {
		t.Fatalf("held %v after the drop", got)
	}

	// Shown: the part is delivered and the hold dropped with it.
	in.MsgID = "m2"
	id2, _, err := store.InsertInboundHeld(ctx, pool, in, store.InboundPending, hold)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.InsertOutbox(ctx, pool, store.Reply{Key: store.AnswerKey(id2), Channel: "wecom", Account: "bot",
		OrderKey: "wecom/bot/u", Format: channels.FormatMarkdown, Parts: []string{"好"}}); err != nil {
		t.Fatal(err)
	}
	rest, err := store.MarkFirstPartShown(ctx, pool, id2, t0)
	if err != nil || rest {
		t.Fatalf("MarkFirstPartShown = %v, %v; want no parts after it", rest, err)
	}
	if waiting, err := store.DropHold(ctx, pool, store.AnswerKey(id2)); err != nil || waiting {
		t.Fatalf("after Shown: waiting %v (%v), want the part delivered", waiting, err)
	}
	var holds int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM live_holds`).Scan(&holds); err != nil || holds != 0 {
		t.Fatalf("%d holds left (%v)", holds, err)
	}
}
