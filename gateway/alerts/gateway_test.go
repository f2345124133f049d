package alerts_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/alerts"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// alertsYAML is a rule that fires when more than 2 replies are given up
// in 10 minutes, posted to the operator ops-lead of the test app.
const alertsYAML = `alerts:
  rules:
    - name: 投递失败
      when: deliveries_failed
      above: 2
      to: {channel: wecom, account: ` + gatewaytest.App + `, chat_type: single, chat_id: ops-lead}
`

// startAlerts runs a gateway on clock with extra, returning its alerts
// service.
func startAlerts(h *gatewaytest.Harness, extra string, clock *chantest.Clock) *alerts.Service {
	h.T.Helper()
	features := gatewaytest.NewFeatures()
	h.StartExtra(extra, gateway.Deps{Features: features, Now: clock.Now})
	return gatewaytest.FeatureOf[*alerts.Service](h.T, features)
}

// giveUp stores n replies given up at at, as the delivery worker leaves
// them after its last attempt.
func giveUp(h *gatewaytest.Harness, ctx context.Context, prefix string, n int, at time.Time) {
	h.T.Helper()
	if _, err := h.Pool.Exec(ctx, `INSERT INTO outbox (reply_key, part, channel, account, reply_to, text, last_error, failed_at)
SELECT $1 || g, 0, 'wecom', 'app', '{}', '…', 'errcode 45009', $3 FROM generate_series(1, $2::int) g`, prefix, n, at); err != nil {
		h.T.Fatal(err)
	}
}

// alertsQueued are the alerts in the outbox.
func alertsQueued(h *gatewaytest.Harness, ctx context.Context) int {
	h.T.Helper()
	var n int
	if err := h.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE reply_key LIKE 'alert:%'`).Scan(&n); err != nil {
		h.T.Fatal(err)
	}
	return n
}

// TestOneIncidentIsOneAlertAcrossReplicas: two replicas check the rule
// every "minute" of a fake clock. Under the threshold nothing is posted;
// above it one alert however often both check, also while failures keep
// it above into the next window; once the measure is back under the
// threshold one "resolved" message; a new incident is a new alert; while
// the rule is silenced its incidents are recorded and not posted.
func TestOneIncidentIsOneAlertAcrossReplicas(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h := gatewaytest.New(t)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	start := time.Now().Truncate(10 * time.Minute).Add(time.Minute)
	clock := chantest.NewClock(start)
	a := startAlerts(h, alertsYAML, clock)
	b := startAlerts(h, alertsYAML, clock)
	checkBoth := func(minutes int) {
		t.Helper()
		for range minutes {
			clock.Add(time.Minute)
			for _, s := range []*alerts.Service{a, b} {
				if _, err := s.Check(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	queued := func() []string {
		t.Helper()
		var texts []string
		rows, err := h.Pool.Query(ctx, `SELECT text FROM outbox WHERE reply_key LIKE 'alert:%' ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, s)
		}
		return texts
	}

	giveUp(h, ctx, "old:", 5, start.Add(-11*time.Minute)) // outside the window
	giveUp(h, ctx, "now:", 2, start.Add(-time.Minute))
	checkBoth(1)
	if got := queued(); len(got) != 0 {
		t.Fatalf("2 given up (threshold 2): queued %q; want nothing", got)
	}

	giveUp(h, ctx, "more:", 1, clock.Now())
	checkBoth(4)
	got := queued()
	if len(got) != 1 || got[0] != "【Hermes 告警】投递失败：最近 10 分钟 放弃投递的回复数为 3，超过阈值 2。" {
		t.Fatalf("3 given up, 8 checks by 2 replicas: queued %q; want one alert", got)
	}
	msgs, err := h.WeComAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := msgs[0]; m.ToUser != "ops-lead" || m.Content != got[0] {
		t.Errorf("alert sent to %q: %q", m.ToUser, m.Content)
	}

	// A failure near the end of the window keeps it above into the next:
	// the same incident, no second alert.
	giveUp(h, ctx, "late:", 3, clock.Now())
	checkBoth(8)
	if got := queued(); len(got) != 1 {
		t.Fatalf("the incident went on into the next window: queued %q; want still one alert", got)
	}

	// Every failure has left the window: resolved, once.
	checkBoth(10)
	got = queued()
	if len(got) != 2 || !strings.HasPrefix(got[1], "【Hermes 告警恢复】投递失败：最近 10 分钟 放弃投递的回复数为 0，已回到阈值 2 以内（持续 ") {
		t.Fatalf("after the failures left the window: queued %q; want the alert and one resolution", got)
	}

	// A new incident is a new alert.
	giveUp(h, ctx, "again:", 3, clock.Now())
	checkBoth(1)
	if got := queued(); len(got) != 3 {
		t.Fatalf("a new incident: queued %q; want a third message", got)
	}
	checkBoth(11) // resolved again

	// Silenced: the incident is recorded, nothing posted.
	if err := alerts.Silence(ctx, h.Pool, h.ConfigWith(alertsYAML).Alerts.Rules, "投递失败", clock.Now().Add(time.Hour), "ops-zhang", "planned maintenance", clock.Now()); err != nil {
		t.Fatal(err)
	}
	giveUp(h, ctx, "muted:", 3, clock.Now())
	checkBoth(2)
	if got := queued(); len(got) != 4 {
		t.Errorf("while silenced: queued %q; want nothing new after the second resolution", got)
	}
	if n := h.Count(`SELECT count(*) FROM alert_firings WHERE silenced`); n != 1 {
		t.Errorf("%d silenced incidents recorded, want 1", n)
	}
	if n := h.Count(`SELECT count(*) FROM alert_silences WHERE by = 'ops-zhang' AND reason = 'planned maintenance'`); n != 1 {
		t.Errorf("the silence is not recorded with who and why")
	}
	if err := alerts.Silence(ctx, h.Pool, h.ConfigWith(alertsYAML).Alerts.Rules, "没有这条", clock.Now().Add(time.Hour), "x", "", clock.Now()); !errors.Is(err, alerts.ErrUnknownRule) {
		t.Errorf("silencing an unknown rule: %v", err)
	}
}

// TestAlertToAChatTheChannelCannotReach: a WeCom app cannot post into a
// group chat, so the gateway is not built, naming the rule.
func TestAlertToAChatTheChannelCannotReach(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	cfg := h.ConfigWith(strings.Replace(alertsYAML, "chat_type: single", "chat_type: group", 1))
	_, err := gateway.New(context.Background(), cfg, gateway.Deps{Pool: h.Pool, Platforms: gatewaytest.Platforms, Features: gatewaytest.NewFeatures(), Logger: gatewaytest.Logger(t)})
	if err == nil || !strings.Contains(err.Error(), "alerts.rules[0].to") || !errors.Is(err, channels.ErrCannotPush) {
		t.Errorf("alert to a group of an app: %v, want an error naming alerts.rules[0].to", err)
	}
}

// TestAlertCheckedByTheLeader: nobody calls Check; the leader's periodic
// job (run at start, then every minute) finds the replies given up and
// posts the alert.
func TestAlertCheckedByTheLeader(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h := gatewaytest.New(t)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	clock := chantest.NewClock(time.Now())
	giveUp(h, ctx, "gone:", 3, clock.Now().Add(-time.Minute))
	startAlerts(h, alertsYAML, clock)
	msgs, err := h.WeComAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatalf("no alert from the periodic check: %v", err)
	}
	if m := msgs[0]; m.ToUser != "ops-lead" || !strings.Contains(m.Content, "投递失败") {
		t.Errorf("alert sent to %q: %q", m.ToUser, m.Content)
	}
}
