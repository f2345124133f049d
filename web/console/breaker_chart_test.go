package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/web/console"
)

// TestBreakerOpeningsOnSkillsPage: a breaker tripped by a backend
// answering 500, whose recorder is the registry's hook, is marked in the
// skills page's breaker chart although no stored call ran into it; a
// skill whose breaker opened and refused calls shows both numbers in its
// hour; hours without either have no row.
func TestBreakerOpeningsOnSkillsPage(t *testing.T) {
	pool := openPool(t)
	ctx := context.Background()
	now := time.Now()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(backend.Close)
	rec := store.NewBreakerRecorder(pool, discard())
	reg, err := skills.NewRegistry([]*skills.Skill{{Name: "it_vpn_reset", Description: "reset", Endpoint: backend.URL,
		Identity: skills.IdentityConfig{None: true}, Breaker: &skills.BreakerPolicy{Failures: 1, OpenFor: time.Hour}}},
		skills.Options{Now: func() time.Time { return now }, Logger: discard(), OnBreakerChange: rec.Record})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Call(ctx, skills.Caller{UserID: "zhangsan", Channel: "wecom", Account: "app"}, "it_vpn_reset", nil); err == nil {
		t.Fatal("the call to a backend answering 500 succeeded")
	}
	rec.Wait()

	// hr_leave_balance's breaker opened two hours ago and refused two calls
	// of a run then.
	earlier := now.Add(-2 * time.Hour)
	var session, in int64
	if err := pool.QueryRow(ctx, `INSERT INTO sessions (channel, account, chat_id, user_id) VALUES ('wecom', 'app', 'c', 'u') RETURNING id`).Scan(&session); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, status)
VALUES ('wecom', 'app', 'm1', 'text', 'c', 'single', 'u', 'done') RETURNING id`).Scan(&in); err != nil {
		t.Fatal(err)
	}
	refusal := "skill hr_leave_balance is unavailable: " + store.BreakerOpenError + " after repeated failures"
	if err := store.InsertRun(ctx, pool, store.RunRecord{ID: "run-1", SessionID: session, InboundID: in, Model: "m", StopReason: "finished",
		StartedAt: earlier, FinishedAt: earlier}, []store.StepRecord{
		{Step: 1, Kind: "tool", Tool: "hr_leave_balance", Error: "skill hr_leave_balance is unavailable (HTTP 503)"},
		{Step: 2, Kind: "tool", Tool: "hr_leave_balance", Error: refusal},
		{Step: 3, Kind: "tool", Tool: "hr_leave_balance", Error: refusal},
	}); err != nil {
		t.Fatal(err)
	}
	if err := store.InsertBreakerEvent(ctx, pool, "hr_leave_balance", "closed", "open", earlier); err != nil {
		t.Fatal(err)
	}

	c := console.New(console.Deps{Store: store.NewConsole(pool), Logger: discard(), Skills: func() *skills.Registry { return reg }})
	base, cl := serveAsAdmin(t, pool, c)
	for _, period := range []string{"24h", "7d"} {
		status, body := get(t, cl, base+"/console/skills?trend="+period)
		if status != http.StatusOK {
			t.Fatalf("skills page %s: %d", period, status)
		}
		rows := chartRows(t, body, "chart-skill-breaker")
		want := [][]string{
			{"时段", "技能", "打开次数", "被拒绝的调用"},
			{hourLabel(period, earlier), "hr_leave_balance", "1", "2"},
			{hourLabel(period, now), "it_vpn_reset", "1", "0"},
		}
		if len(rows) != len(want) {
			t.Fatalf("%s breaker table:\n%q\nwant\n%q", period, rows, want)
		}
		for i := range want {
			if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
				t.Errorf("%s breaker row %d: %q, want %q", period, i, rows[i], want[i])
			}
		}
	}
}

// hourLabel is how the tables of period name the bucket t falls in: an
// hour over 24 hours, a quarter of the local day over 7 days.
func hourLabel(period string, t time.Time) string {
	t = t.Local()
	step := map[string]time.Duration{"24h": time.Hour, "7d": 6 * time.Hour}[period]
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
	start := midnight.Add(t.Sub(midnight) / step * step)
	return start.Format("01-02 15:04") + "–" + start.Add(step).Format("15:04")
}
