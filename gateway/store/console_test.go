package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// A reply given up undelivered is a failure of its account, counted once
// however many of its parts failed, also on an account that only sends
// (reports) and never received a message.
func TestAccountStatsCountUndeliveredReplies(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	now := time.Now()
	failReply := func(key string, n int, at time.Time) {
		t.Helper()
		texts := make([]string, n)
		for i := range texts {
			texts[i] = "第" + string(rune('1'+i)) + "部分"
		}
		if _, err := store.InsertOutbox(ctx, pool, store.Reply{Key: key, Channel: "wecom", Account: "app-reports",
			OrderKey: "wecom/app-reports/zhangsan", Format: channels.FormatText, Parts: texts}); err != nil {
			t.Fatal(err)
		}
		parts, err := store.UndeliveredInOrder(ctx, pool, "", key)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if err := store.MarkSendError(ctx, pool, p.ID, "errcode 81013: user invalid", true, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	failReply("report:1:0", 2, now.Add(-time.Minute))
	failReply("report:2:0", 1, now.Add(-2*time.Hour)) // before the window
	stats, err := store.AccountStats(ctx, pool, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 {
		t.Fatalf("stats %+v, want the reports-only account", stats)
	}
	s := stats[0]
	if s.Channel != "wecom" || s.Account != "app-reports" || s.Failures != 1 || s.Undelivered != 1 || s.Messages != 0 ||
		!s.LastReceived.IsZero() || s.LastError != "errcode 81013: user invalid" {
		t.Fatalf("stats %+v, want one undelivered reply as the account's one failure, nothing received", s)
	}
}
