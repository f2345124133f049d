package gateway_test

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
)

// alertsYAML is a rule that fires when more than 2 replies are given up
// in 10 minutes, posted to the operator ops-lead of the test app.
const alertsYAML = `alerts:
  rules:
    - name: 投递失败
      when: deliveries_failed
      above: 2
      to: {channel: wecom, account: ` + testApp + `, chat_type: single, chat_id: ops-lead}
`

// startAlerts runs a gateway on clock with extra, returning its alerts
// service.
func (h *harness) startAlerts(extra string, clock *chantest.Clock) *alerts.Service {
	h.t.Helper()
	features := newFeatures()
	h.startExtra(extra, gateway.Deps{Features: features, Now: clock.Now})
	return featureOf[*alerts.Service](h.t, features)
}

// giveUp stores n replies given up at at, as the delivery worker leaves
// them after its last attempt.
func (h *harness) giveUp(ctx context.Context, prefix string, n int, at time.Time) {
	h.t.Helper()
	if _, err := h.pool.Exec(ctx, `INSERT INTO outbox (reply_key, part, channel, account, reply_to, text, last_error, failed_at)
SELECT $1 || g, 0, 'wecom', 'app', '{}', '…', 'errcode 45009', $3 FROM generate_series(1, $2::int) g`, prefix, n, at); err != nil {
		h.t.Fatal(err)
	}
}

// alertsQueued are the alerts in the outbox.
func (h *harness) alertsQueued(ctx context.Context) int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE reply_key LIKE 'alert:%'`).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// TestAlertFiresOncePerWindowAcrossReplicas: two replicas check the rule
// every "minute" of a fake clock; under the threshold nothing is posted,
// above it one alert per window however often both check, and another in
// the next window.
func TestAlertFiresOncePerWindowAcrossReplicas(t *testing.T) {
	t.Parallel()
	heavy(t)
	h := newHarness(t)
	ctx := withTimeout(t, 60*time.Second)
	start := time.Now().Truncate(10 * time.Minute).Add(time.Minute)
	clock := chantest.NewClock(start)
	a := h.startAlerts(alertsYAML, clock)
	b := h.startAlerts(alertsYAML, clock)
	check := func(s *alerts.Service) int {
		t.Helper()
		n, err := s.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	h.giveUp(ctx, "old:", 5, start.Add(-11*time.Minute)) // outside the window
	h.giveUp(ctx, "now:", 2, start.Add(-time.Minute))
	if n := check(a) + check(b); n != 0 || h.alertsQueued(ctx) != 0 {
		t.Fatalf("2 given up (threshold 2): %d alerts fired, %d queued; want none", n, h.alertsQueued(ctx))
	}

	h.giveUp(ctx, "more:", 1, start)
	fired := 0
	for range 4 {
		clock.Add(time.Minute)
		fired += check(a) + check(b)
	}
	// The leader's own periodic check may be the one that fired.
	if fired > 1 || h.alertsQueued(ctx) != 1 {
		t.Fatalf("3 given up, 8 checks by 2 replicas in one window: %d fired here, %d queued; want 1 queued", fired, h.alertsQueued(ctx))
	}
	msgs, err := h.wecomAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := msgs[0]; m.ToUser != "ops-lead" || m.Content != "【Hermes 告警】投递失败：最近 10 分钟 放弃投递的回复数为 3，超过阈值 2。" {
		t.Errorf("alert sent to %q: %q", m.ToUser, m.Content)
	}

	// The next window: 1 + 2 given up in the last 10 minutes.
	clock.Set(start.Add(10 * time.Minute))
	h.giveUp(ctx, "next:", 2, start.Add(9*time.Minute))
	if n := check(b) + check(a); n > 1 || h.alertsQueued(ctx) != 2 {
		t.Errorf("next window: %d fired here, %d queued in all; want 2 queued", n, h.alertsQueued(ctx))
	}
}

// TestAlertToAChatTheChannelCannotReach: a WeCom app cannot post into a
// group chat, so the gateway is not built, naming the rule.
func TestAlertToAChatTheChannelCannotReach(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cfg := h.config2(strings.Replace(alertsYAML, "chat_type: single", "chat_type: group", 1))
	_, err := gateway.New(context.Background(), cfg, gateway.Deps{Pool: h.pool, Platforms: platforms, Features: newFeatures(), Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "alerts.rules[0].to") || !errors.Is(err, channels.ErrCannotPush) {
		t.Errorf("alert to a group of an app: %v, want an error naming alerts.rules[0].to", err)
	}
}

// TestAlertCheckedByTheLeader: nobody calls Check; the leader's periodic
// job (run at start, then every minute) finds the replies given up and
// posts the alert.
func TestAlertCheckedByTheLeader(t *testing.T) {
	t.Parallel()
	heavy(t)
	h := newHarness(t)
	ctx := withTimeout(t, 60*time.Second)
	clock := chantest.NewClock(time.Now())
	h.giveUp(ctx, "gone:", 3, clock.Now().Add(-time.Minute))
	h.startAlerts(alertsYAML, clock)
	msgs, err := h.wecomAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatalf("no alert from the periodic check: %v", err)
	}
	if m := msgs[0]; m.ToUser != "ops-lead" || !strings.Contains(m.Content, "投递失败") {
		t.Errorf("alert sent to %q: %q", m.ToUser, m.Content)
	}
}
