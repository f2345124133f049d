package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestClaimPlansOnceButHistoryByCost: the claim's statements run their
// generic plans (made once per connection: no planning per message), but
// the history it reads is planned as Postgres chooses (a generic plan
// forced on it, made on a young table, read a whole session and sorted
// it): for its first five calls, for its values. pg_prepared_statements
// counts the plans each of the connection's statements ran.
func TestClaimPlansOnceButHistoryByCost(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	now := time.Now()
	const claims = 3
	for i := range claims {
		user := fmt.Sprintf("u%d", i)
		in := channels.Inbound{Channel: "wecom", Account: "app", MsgID: user, MsgType: "text", ChatID: user, ChatType: "single",
			Sender: channels.Identity{UserID: user}, Text: "hi"}
		id, _, err := store.InsertInbound(ctx, pool, in, store.InboundPending)
		if err != nil {
			t.Fatal(err)
		}
		c, err := store.ClaimInbound(ctx, conn, id, "r", fmt.Sprintf("run%d", i), now, now.Add(time.Minute), store.HistoryQuery{Limit: 10})
		if err != nil || !c.Answer || c.Session == nil {
			t.Fatalf("claim %d: %+v, %v; want an answer with the history read", i, c, err)
		}
	}
	rows, err := conn.Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][2]int64{}
	for rows.Next() {
		var sql string
		var generic, custom int64
		if err := rows.Scan(&sql, &generic, &custom); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(sql, "FROM messages") && strings.Contains(sql, "ORDER BY id DESC LIMIT"):
			found["history"] = [2]int64{generic, custom}
		case strings.Contains(sql, "SELECT o.id FROM inbound_messages o"):
			found["message in its session"] = [2]int64{generic, custom}
		case strings.Contains(sql, "INSERT INTO sessions"):
			found["session upsert"] = [2]int64{generic, custom}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int64{
		"history":                {0, claims},
		"message in its session": {claims, 0},
		"session upsert":         {claims, 0},
	}
	for name, w := range want {
		if got, ok := found[name]; !ok || got != w {
			t.Errorf("%s: generic and custom plans %v (found %v), want %v", name, got, ok, w)
		}
	}
}
