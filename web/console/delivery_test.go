package console_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
)

// failuresCell is the overview's failures cell of account acc-1.
var failuresCell = regexp.MustCompile(`<td>test</td><td>acc-1</td><td class="num">[^<]*</td><td class="num">\d+</td>\s*<td class="num ?(?:bad)?">([^\n]*?)</td>`)

// A reply the platform refuses for good is a failure: the overview counts
// it, and the conversation shows the answer as not delivered, not as if it
// arrived.
func TestUndeliverableReplyIsAFailure(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client(t)
	f.login(t, c, viewerUser, viewerPass)
	_, body := get(t, c, f.srv.URL+"/console/")
	if m := failuresCell.FindStringSubmatch(body); m == nil || m[1] != "0" {
		t.Fatalf("before: failures cell %q, want 0:\n%s", m, body)
	}

	f.ch.FailWith(func(channels.Outbound) error {
		return fmt.Errorf("chantest: the user left the company: %w", channels.ErrPermanent)
	})
	if _, err := f.gw.Accept(ctx, f.ch.Message("acc-1", "msg-leave-3", "wangwu", "wangwu", askedText, false, false)); err != nil {
		t.Fatal(err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var failed int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE failed_at IS NOT NULL`).Scan(&failed); err != nil {
			t.Fatal(err)
		}
		if failed > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the delivery was never given up")
		case <-tick.C:
		}
	}

	_, body = get(t, c, f.srv.URL+"/console/")
	m := failuresCell.FindStringSubmatch(body)
	if m == nil || !strings.HasPrefix(m[1], "1 ") || !strings.Contains(m[1], "1 条未送达") {
		t.Fatalf("after: failures cell %q, want 1 (1 undelivered):\n%s", m, body)
	}

	convs, err := store.FindConversations(ctx, f.pool, store.ConversationFilter{UserID: "wangwu"})
	if err != nil || len(convs) != 1 {
		t.Fatalf("wangwu's conversations: %v, %v", convs, err)
	}
	_, thread := get(t, c, f.srv.URL+"/console/conversations/"+itoa(convs[0].ID))
	if !strings.Contains(thread, answeredText) {
		t.Fatalf("the thread lacks the answer:\n%s", thread)
	}
	if !strings.Contains(thread, "此回复未能送达用户") || !strings.Contains(thread, "the user left the company") {
		t.Fatalf("the thread shows the undelivered answer as delivered:\n%s", thread)
	}
	// The answer that did arrive carries no such mark.
	convs, err = store.FindConversations(ctx, f.pool, store.ConversationFilter{UserID: "zhangsan"})
	if err != nil || len(convs) != 1 {
		t.Fatalf("zhangsan's conversations: %v, %v", convs, err)
	}
	_, thread = get(t, c, f.srv.URL+"/console/conversations/"+itoa(convs[0].ID))
	if !strings.Contains(thread, answeredText) || strings.Contains(thread, "未能送达") {
		t.Fatalf("a delivered answer is marked undelivered:\n%s", thread)
	}
	// In English too.
	get(t, c, f.srv.URL+"/console/lang?to=en")
	_, body = get(t, c, f.srv.URL+"/console/")
	if m := failuresCell.FindStringSubmatch(body); m == nil || !strings.Contains(m[1], "1 undelivered") {
		t.Fatalf("English failures cell %q:\n%s", m, body)
	}
}
