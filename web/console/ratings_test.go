package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/ratings"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/web/console"
)

// TestRatingsOnTheConsole: ratings given through gateway/ratings show on
// the run they rate and, per day, in the overview's ratings chart with the
// share of 👍.
func TestRatingsOnTheConsole(t *testing.T) {
	pool := openPool(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 15, 0, 0, 0, time.Local) // the four ratings on one day
	var session int64
	if err := pool.QueryRow(ctx, `INSERT INTO sessions (channel, account, chat_id, user_id) VALUES ('wecom', 'app', 'c', 'u') RETURNING id`).Scan(&session); err != nil {
		t.Fatal(err)
	}
	in := channels.Inbound{Channel: "wecom", Account: "app", ChatID: "c", Sender: channels.Identity{UserID: "u"}}
	for i, rating := range []int{1, 1, 1, -1} {
		var msg int64
		at := now.Add(-time.Duration(4-i) * time.Minute)
		if err := pool.QueryRow(ctx, `INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, status, received_at)
VALUES ('wecom', 'app', $1, 'text', 'c', 'single', 'u', 'done', $2) RETURNING id`, "m"+itoa(int64(i)), at).Scan(&msg); err != nil {
			t.Fatal(err)
		}
		if err := store.InsertRun(ctx, pool, store.RunRecord{ID: "run-" + itoa(int64(i)), SessionID: session, InboundID: msg, Model: "m",
			StopReason: "finished", StartedAt: at, FinishedAt: at}, nil); err != nil {
			t.Fatal(err)
		}
		if ok, err := ratings.Rate(ctx, pool, in, rating, at.Add(time.Second)); err != nil || !ok {
			t.Fatalf("rate run %d: %v %v", i, ok, err)
		}
	}
	c := console.New(console.Deps{Store: store.NewConsole(pool), Logger: discard(), Now: func() time.Time { return now }})
	base, cl := serveAsAdmin(t, pool, c)
	_, body := get(t, cl, base+"/console/?trend=24h")
	rows := chartRows(t, body, "chart-ratings")
	if n := sumColumn(t, rows, "👍"); n != 3 {
		t.Errorf("the ratings chart counts %d 👍, want 3", n)
	}
	if n := sumColumn(t, rows, "👎"); n != 1 {
		t.Errorf("the ratings chart counts %d 👎, want 1", n)
	}
	if last := rows[len(rows)-1]; last[len(last)-1] != "75.0" {
		t.Errorf("today's 👍 share %q, want 75.0", last[len(last)-1])
	}
	status, page := get(t, cl, base+"/console/runs/run-3")
	if status != http.StatusOK || !strings.Contains(page, `id="run-rating"><span class="bad">👎`) {
		t.Errorf("run-3 page (%d) does not show its 👎", status)
	}
	if _, page := get(t, cl, base+"/console/runs/run-0"); !strings.Contains(page, `id="run-rating"><span class="ok">👍`) {
		t.Error("run-0 page does not show its 👍")
	}
}
