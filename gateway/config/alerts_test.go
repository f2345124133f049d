package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
)

const alertRule = "alerts:\n  rules:\n    - {name: given-up, when: deliveries_failed, above: 5, to: {channel: wecom, account: app-ops, chat_id: ops}}\n"

func TestAlertsDefaults(t *testing.T) {
	t.Parallel()
	cfg := parse(t, memoryBase+alertRule)
	r := cfg.Alerts.Rules[0]
	if r.Window != 10*time.Minute || r.To.ChatType != "group" {
		t.Errorf("window %s, chat type %q; want 10m0s and group", r.Window, r.To.ChatType)
	}
	if n, err := r.Threshold(); n != 5 || err != nil {
		t.Errorf("threshold %v %v, want 5", n, err)
	}
	if cfg.Alerts.Messages != config.DefaultAlertMessages {
		t.Errorf("messages %+v, want the defaults", cfg.Alerts.Messages)
	}
	cfg = parse(t, memoryBase+"alerts:\n  rules:\n    - {name: slow, when: answer_p95, above: 1m30s, window: 1h, to: {channel: wecom, account: a, chat_id: c}}\n")
	if n, err := cfg.Alerts.Rules[0].Threshold(); n != 90 || err != nil {
		t.Errorf("p95 threshold %v %v, want 90 (seconds)", n, err)
	}
	if len(parse(t, memoryBase).Alerts.Rules) != 0 {
		t.Error("alerts left out: rules were made up")
	}
}

func TestAlertsErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	rule := func(fields string) string {
		return "alerts:\n  rules:\n    - {" + fields + "}\n"
	}
	to := "to: {channel: wecom, account: a, chat_id: c}"
	for yaml, key := range map[string]string{
		rule("when: runs_failed, above: 1, " + to):                                                                  "alerts.rules[0].name",
		rule("name: x, when: errors, above: 1, " + to):                                                              "alerts.rules[0].when",
		rule("name: x, when: runs_failed, above: many, " + to):                                                      "alerts.rules[0].above",
		rule("name: x, when: runs_failed, above: -1, " + to):                                                        "alerts.rules[0].above",
		rule("name: x, when: answer_p95, above: 12, " + to):                                                         "alerts.rules[0].above",
		rule("name: x, when: runs_failed, above: 1, window: 10s, " + to):                                            "alerts.rules[0].window",
		rule("name: x, when: runs_failed, above: 1, window: 48h, " + to):                                            "alerts.rules[0].window",
		rule("name: x, when: runs_failed, above: 1, to: {channel: wecom, account: a}"):                              "alerts.rules[0].to.chat_id",
		rule("name: x, when: runs_failed, above: 1, to: {account: a, chat_id: c}"):                                  "alerts.rules[0].to.channel",
		rule("name: x, when: runs_failed, above: 1, to: {channel: wecom, chat_id: c}"):                              "alerts.rules[0].to.account",
		rule("name: x, when: runs_failed, above: 1, to: {channel: wecom, account: a, chat_id: c, chat_type: room}"): "alerts.rules[0].to.chat_type",
		alertRule + "    - {name: given-up, when: runs_failed, above: 1, " + to + "}\n":                             "alerts.rules[1].name",
		rule("name: x, when: skill_error_rate, above: 120%, " + to):                                                 "alerts.rules[0].above",
		rule("name: x, when: cost, above: cheap, " + to):                                                            "alerts.rules[0].above",
		rule("name: x, when: no_traffic, hours: 18:00-09:00, " + to):                                                "alerts.rules[0].hours",
		rule("name: x, when: no_traffic, tz: Mars/Base, " + to):                                                     "alerts.rules[0].tz",
		alertRule + "  messages:\n    fired: '告警 %s'\n":                                                             "alerts.messages.fired",
		rule("name: x, when: budget, account: wecom/app, above: 80%, " + to):                                        "alerts.rules[0].account",
		"costs:\n  budgets: {wecom/app: 100}\n" + rule("name: x, when: budget, account: wecom/app, above: 0%, "+to): "alerts.rules[0].above",
		"costs:\n  budgets: {app: 100}\n":                                                                           "costs.budgets.app",
		"costs:\n  budgets: {wecom/app: 0}\n":                                                                       "costs.budgets.wecom/app",
	} {
		_, err := config.ParseConfig([]byte(memoryBase+yaml), env(nil))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", yaml, err, key)
		}
	}
}

// The newer measures read their thresholds: a percentage, a count, an
// amount; no_traffic needs none and gets working hours; cost looks back a
// day unless told otherwise.
func TestAlertsNewerMeasures(t *testing.T) {
	t.Parallel()
	to := "to: {channel: wecom, account: a, chat_id: c}"
	cfg := parse(t, memoryBase+"alerts:\n  rules:\n"+
		"    - {name: a, when: skill_error_rate, skill: hr_leave_balance, above: 20%, "+to+"}\n"+
		"    - {name: b, when: breaker_openings, above: 0, "+to+"}\n"+
		"    - {name: c, when: delivery_backlog, above: 50, "+to+"}\n"+
		"    - {name: d, when: cost, above: 300, "+to+"}\n"+
		"    - {name: e, when: no_traffic, window: 30m, "+to+"}\n"+
		"    - {name: f, when: refused_callbacks, above: 10, "+to+"}\n"+
		"    - {name: g, when: budget, account: wecom/app-hr, above: 80%, "+to+"}\n"+
		"costs:\n  budgets: {wecom/app-hr: 500}\n")
	r := cfg.Alerts.Rules
	for i, want := range []float64{20, 0, 50, 300, 0, 10, 80} {
		if got, err := r[i].Threshold(); err != nil || got != want {
			t.Errorf("rule %s: threshold %v (%v), want %v", r[i].Name, got, err, want)
		}
	}
	if b, ok := cfg.Costs.Budget("wecom/app-hr"); !ok || b != 500 || r[6].TZ != "Asia/Shanghai" {
		t.Errorf("budget %v %v, tz %q; want 500 in Asia/Shanghai's months", b, ok, r[6].TZ)
	}
	if r[3].Window != 24*time.Hour || r[4].Hours != "09:00-18:00" || r[4].TZ != "Asia/Shanghai" {
		t.Errorf("defaults: cost window %s, no_traffic hours %q tz %q", r[3].Window, r[4].Hours, r[4].TZ)
	}
}
