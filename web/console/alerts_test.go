package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The alerts page shows each rule's state and incidents to anyone signed
// in; only an admin silences a rule, recorded under their account with
// the reason, and the page then says until when.
func TestAlertsPageShowsStateAndSilences(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	base := f.srv.URL + "/console"
	start := time.Now().Add(-30 * time.Minute)
	for _, sql := range []string{
		`INSERT INTO alert_state (rule, firing_since) VALUES ('投递失败', $1)`,
		`INSERT INTO alert_firings (rule, window_start, value, fired_at) VALUES ('投递失败', $1, 7, $1)`,
	} {
		if _, err := f.pool.Exec(ctx, sql, start); err != nil {
			t.Fatal(err)
		}
	}

	v := client(t)
	_, vcsrf := f.login(t, v, viewerUser, viewerPass)
	status, body := get(t, v, base+"/alerts")
	if status != http.StatusOK || !strings.Contains(body, "投递失败") || !strings.Contains(body, "告警中") ||
		!strings.Contains(body, "deliveries_failed") || strings.Contains(body, `class="silence"`) {
		t.Fatalf("viewer's alerts page: %d, want the firing rule without the silence form:\n%s", status, body)
	}
	if status, _ := postForm(t, v, base+"/alerts/silence", url.Values{"csrf": {vcsrf}, "rule": {"投递失败"}, "for": {"1h0m0s"}}); status != http.StatusForbidden {
		t.Errorf("viewer's silence: %d, want 403", status)
	}

	c := client(t)
	_, csrf := f.login(t, c, adminUser, adminPass)
	if status, _ := postForm(t, c, base+"/alerts/silence", url.Values{"csrf": {csrf}, "rule": {"没有"}, "for": {"1h0m0s"}}); status != http.StatusNotFound {
		t.Errorf("silencing an unknown rule: %d, want 404", status)
	}
	if status, _ := postForm(t, c, base+"/alerts/silence", url.Values{"csrf": {csrf}, "rule": {"投递失败"}, "for": {"9999h"}}); status != http.StatusBadRequest {
		t.Errorf("a silence of 9999h: %d, want 400", status)
	}
	resp, err := c.PostForm(base+"/alerts/silence", url.Values{"csrf": {csrf}, "rule": {"投递失败"}, "for": {"4h0m0s"}, "reason": {"升级窗口"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("silence: %d, want 303", resp.StatusCode)
	}
	if _, body := get(t, c, base+"/alerts"); !strings.Contains(body, "静音至") || !strings.Contains(body, `class="silence"`) {
		t.Errorf("the admin's page after the silence:\n%s", body)
	}
	var n int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM alert_silences WHERE rule = '投递失败' AND by = $1 AND reason = '升级窗口'
AND until > now() + interval '3 hours'`, adminUser).Scan(&n); err != nil || n != 1 {
		t.Errorf("silences recorded: %d (err %v), want the admin's 4h one", n, err)
	}
}
