package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestCardClaimedOnceBeforeExpiry: a card is claimed at most once, and
// never once expired; settling its run's cards claims the pending ones and
// names the claimed ones, never an expired one.
func TestCardClaimedOnceBeforeExpiry(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	card := func(id, run string) store.Card {
		return store.Card{ID: id, Channel: "feishu", Account: "bot", Kind: store.CardConfirm, SessionID: 7, RunID: run,
			ChatID: "oc_1", ChatType: channels.ChatSingle, Requester: channels.Identity{UserID: "zhangsan"}, RequesterRef: "ou_1",
			Buttons:   []channels.Button{{Action: channels.ActionConfirm, Label: "确认"}},
			CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
	}
	for _, c := range []store.Card{card("a", "r1"), card("b", "r1"), card("c", "r2"), card("d", "r1")} {
		if err := store.InsertCard(ctx, pool, c); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(id string, at time.Time) bool {
		t.Helper()
		ok, err := store.ClaimCard(ctx, pool, id, channels.ActionConfirm, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !claim("a", now) || claim("a", now) {
		t.Fatal("card a: want claimed once")
	}
	if claim("c", now.Add(5*time.Minute)) {
		t.Fatal("card c claimed at its expiry")
	}
	if ok, err := store.ExpireCard(ctx, pool, "d"); err != nil || !ok {
		t.Fatalf("expire d: %v %v", ok, err)
	}
	ids, err := store.SettleCardsOfRun(ctx, pool, 7, "r1", channels.ActionCancel, now)
	if err != nil || len(ids) != 2 {
		t.Fatalf("settled %v (%v), want a and b", ids, err)
	}
	a, err := store.GetCard(ctx, pool, "a")
	if err != nil || a.State != store.CardClaimed || a.Action != channels.ActionConfirm || len(a.Buttons) != 1 {
		t.Fatalf("card a %+v (%v): the tap's action stays", a, err)
	}
	if b, _ := store.GetCard(ctx, pool, "b"); b.State != store.CardClaimed || b.Action != channels.ActionCancel {
		t.Fatalf("card b %+v", b)
	}
	if _, err := store.GetCard(ctx, pool, "zz"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown card: %v", err)
	}
}

// TestCardTapsCountQuestionsOnly: the doctor's count of cards answered
// without a tap leaves out answers' rating cards, which most employees
// never tap and whose taps make no message.
func TestCardTapsCountQuestionsOnly(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	now := time.Now().Add(-2 * time.Hour)
	for i, kind := range []string{store.CardConfirm, store.CardRate, store.CardRate} {
		c := store.Card{ID: string(rune('a' + i)), Channel: "feishu", Account: "bot", Kind: kind, SessionID: 7, RunID: "r",
			ChatID: "oc_1", ChatType: channels.ChatSingle, Requester: channels.Identity{UserID: "zhangsan"}, RequesterRef: "ou_1",
			Buttons: []channels.Button{{Action: channels.ActionConfirm, Label: "确认"}}, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := store.InsertCard(ctx, pool, c); err != nil {
			t.Fatal(err)
		}
		if err := store.SetCardMessage(ctx, pool, c.ID, "om_"+c.ID); err != nil {
			t.Fatal(err)
		}
	}
	taps, err := store.CountCardTaps(ctx, pool, now.Add(-time.Hour))
	if err != nil || len(taps) != 1 || taps[0].Sent != 1 || taps[0].Answered != 1 {
		t.Fatalf("taps %+v (%v): want the one question card, expired", taps, err)
	}
}
