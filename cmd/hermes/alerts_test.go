package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestAlertsSilenceAndList: `hermes alerts silence` records who silenced
// which rule until when and why; `hermes alerts list` shows it; an
// unknown rule or a missing --rule is refused.
func TestAlertsSilenceAndList(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t)
	cfg := writeConfig(t, "database:\n  url: "+url+"\nmodel:\n  provider: offline\nalerts:\n  rules:\n"+
		"    - {name: 投递失败, when: deliveries_failed, above: 2, to: {channel: wecom, account: app, chat_type: single, chat_id: ops}}\n")
	code, out, errOut := runCmd(t, "", "alerts", "silence", "--config", cfg, "--rule", "投递失败", "--for", "2h", "--reason", "变更窗口", "--admin", "ops-zhang")
	if code != 0 || !strings.Contains(out, "silenced until") {
		t.Fatalf("silence: exit %d, %q %q", code, out, errOut)
	}
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM alert_silences WHERE rule = '投递失败' AND by = 'ops-zhang' AND reason = '变更窗口'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("silences recorded: %d (err %v), want 1", n, err)
	}
	if code, out, _ := runCmd(t, "", "alerts", "list", "--config", cfg); code != 0 || !strings.Contains(out, "投递失败") || !strings.Contains(out, "silenced until") {
		t.Errorf("list: exit %d, %q", code, out)
	}
	if code, _, errOut := runCmd(t, "", "alerts", "silence", "--config", cfg, "--rule", "没有", "--for", "1h"); code == 0 || !strings.Contains(errOut, "no such rule") {
		t.Errorf("an unknown rule: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCmd(t, "", "alerts", "silence", "--config", cfg, "--for", "1h"); code != 2 || !strings.Contains(errOut, "usage") {
		t.Errorf("no --rule: exit %d, %q", code, errOut)
	}
}
