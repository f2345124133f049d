package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AlertsConfig is the `alerts:` section: threshold rules checked every
// minute by one replica, each posting to an operators' chat through the
// channels when crossed, at most once per rule per window.
type AlertsConfig struct {
	// Rules are the thresholds, at most MaxAlertRules. None (the default):
	// nothing is checked.
	Rules []AlertRule `yaml:"rules"`
	// Messages are the words of an alert, Chinese by default.
	Messages AlertMessages `yaml:"messages"`
}

// The measures a rule watches.
const (
	// AlertDeliveriesFailed counts the replies given up undelivered (a
	// reply counts once however many of its parts failed).
	AlertDeliveriesFailed = "deliveries_failed"
	// AlertRunsFailed counts the agent runs that ended in an error.
	AlertRunsFailed = "runs_failed"
	// AlertAnswerP95 is the 95th percentile of the runs' time to answer.
	AlertAnswerP95 = "answer_p95"
	// AlertSkillErrorRate is the share of skill calls that failed, in
	// percent (above: "20%" or 20), of one skill (AlertRule.Skill) or all.
	AlertSkillErrorRate = "skill_error_rate"
	// AlertBreakerOpenings counts skills' circuit breakers opening.
	AlertBreakerOpenings = "breaker_openings"
	// AlertDeliveryBacklog counts reply parts waiting over a minute to be
	// sent (the window does not apply: it is now).
	AlertDeliveryBacklog = "delivery_backlog"
	// AlertCostPerDay is the model bill over the window (default 24h) in
	// costs.currency, by costs.models' prices.
	AlertCostPerDay = "cost"
	// AlertNoTraffic fires when no message arrived over the window within
	// working hours (AlertRule.Hours, weekdays unless Weekends); above
	// does not apply.
	AlertNoTraffic = "no_traffic"
	// AlertRefusedCallbacks counts the callbacks the platform packages
	// refused (a bad signature, a stale timestamp …): a leaked callback
	// URL under attack, or a rotated secret not yet in the config.
	AlertRefusedCallbacks = "refused_callbacks"
	// AlertBudget is the share of an account's monthly budget
	// (costs.budgets, AlertRule.Account) spent this calendar month in
	// AlertRule.TZ, in percent (above: "80%"): it fires before the budget
	// is spent; the window does not apply.
	AlertBudget = "budget"
)

// alertMeasures are every measure a rule may watch.
var alertMeasures = []string{AlertDeliveriesFailed, AlertRunsFailed, AlertAnswerP95, AlertSkillErrorRate,
	AlertBreakerOpenings, AlertDeliveryBacklog, AlertCostPerDay, AlertNoTraffic, AlertRefusedCallbacks, AlertBudget}

// AlertRule is one threshold.
type AlertRule struct {
	// Name says which rule fired in the alert and keeps it to once per
	// window across replicas; required, unique, at most
	// maxAlertNameLen bytes.
	Name string `yaml:"name"`
	// When is the measure: deliveries_failed, runs_failed, answer_p95,
	// skill_error_rate, breaker_openings, delivery_backlog, cost,
	// no_traffic, refused_callbacks or budget.
	When string `yaml:"when"`
	// Skill limits skill_error_rate to one skill (empty: all).
	Skill string `yaml:"skill"`
	// Account is budget's account, "channel/account", one of
	// costs.budgets.
	Account string `yaml:"account"`
	// Hours are no_traffic's working hours, "09:00-18:00" by default, in
	// TZ (default Asia/Shanghai; budget's months too); Weekends counts
	// Saturday and Sunday as working days too.
	Hours    string `yaml:"hours"`
	TZ       string `yaml:"tz"`
	Weekends bool   `yaml:"weekends"`
	// Above is the threshold the measure must exceed over the window: a
	// count (deliveries_failed, runs_failed) or a duration such as 30s
	// (answer_p95). Required.
	Above string `yaml:"above"`
	// Window is how far back the measure looks and how often at most the
	// rule fires, default 10m, from 1m to 24h.
	Window time.Duration `yaml:"window"`
	// To is the chat the alert goes to.
	To AlertTarget `yaml:"to"`
}

// AlertTarget is a chat an alert is posted to.
type AlertTarget struct {
	Channel string `yaml:"channel"` // platform, e.g. wecom; required
	Account string `yaml:"account"` // app or bot name of the channel; required
	// ChatType is group (the default) or single (ChatID a user id).
	ChatType string `yaml:"chat_type"`
	ChatID   string `yaml:"chat_id"` // the group's id (or user id); required
}

// AlertMessages are the words of an alert (alerts.messages).
type AlertMessages struct {
	// Fired is the alert: %s rule name, %s window, %s measure, %s value
	// now, %s threshold.
	Fired string `yaml:"fired"`
	// Resolved says an incident is over: %s rule name, %s window, %s
	// measure, %s value now, %s threshold, %s how long it lasted.
	Resolved string `yaml:"resolved"`
	// Nothing is the value now when there is nothing to measure (no runs
	// for a percentile).
	Nothing string `yaml:"nothing"`
	// The measures' names in Fired.
	DeliveriesFailed string `yaml:"deliveries_failed"`
	RunsFailed       string `yaml:"runs_failed"`
	AnswerP95        string `yaml:"answer_p95"`
	SkillErrorRate   string `yaml:"skill_error_rate"`
	BreakerOpenings  string `yaml:"breaker_openings"`
	DeliveryBacklog  string `yaml:"delivery_backlog"`
	Cost             string `yaml:"cost"`
	RefusedCallbacks string `yaml:"refused_callbacks"`
	// Budget names the budget measure: %s the account.
	Budget string `yaml:"budget"`
	// NoTrafficFired and NoTrafficResolved are no_traffic's alert and its
	// end: %s rule name, %s window (fired) or how long it lasted.
	NoTrafficFired    string `yaml:"no_traffic_fired"`
	NoTrafficResolved string `yaml:"no_traffic_resolved"`
	// How a window is said: %d minutes, or %d hours when whole.
	Minutes string `yaml:"minutes"`
	Hours   string `yaml:"hours"`
}

// DefaultAlertMessages are the Chinese defaults of AlertMessages.
var DefaultAlertMessages = AlertMessages{
	Fired:             "【Hermes 告警】%s：最近 %s %s为 %s，超过阈值 %s。",
	Resolved:          "【Hermes 告警恢复】%s：最近 %s %s为 %s，已回到阈值 %s 以内（持续 %s）。",
	Nothing:           "无数据",
	DeliveriesFailed:  "放弃投递的回复数",
	RunsFailed:        "失败的运行数",
	AnswerP95:         "回答用时 p95",
	SkillErrorRate:    "技能调用失败率",
	BreakerOpenings:   "熔断器打开次数",
	DeliveryBacklog:   "等待超过 1 分钟的待发回复段数",
	Cost:              "模型费用",
	RefusedCallbacks:  "被拒绝的回调数",
	Budget:            "%s 本月已用预算",
	NoTrafficFired:    "【Hermes 告警】%s：工作时间内已有 %s 没有收到任何消息，请检查各平台的回调和长连接。",
	NoTrafficResolved: "【Hermes 告警恢复】%s：又收到消息了（中断约 %s）。",
	Minutes:           "%d 分钟",
	Hours:             "%d 小时",
}

const (
	// MaxAlertRules bounds alerts.rules: each is a query a minute.
	MaxAlertRules      = 50
	maxAlertNameLen    = 64
	defaultAlertWindow = 10 * time.Minute
	// Bounds of a rule's window: the check runs every minute, and a day
	// is the longest range the runs' index serves quickly.
	minAlertWindow = time.Minute
	maxAlertWindow = 24 * time.Hour
)

// defaultWorkingHours are no_traffic's hours when a rule names none.
const defaultWorkingHours = "09:00-18:00"

// WorkingHours are the rule's hours as minutes after midnight, from and
// to (to after from). Errors say why Hours is unreadable.
func (r AlertRule) WorkingHours() (from, to int, err error) {
	a, b, ok := strings.Cut(r.Hours, "-")
	clock := func(s string) (int, bool) {
		t, err := time.Parse("15:04", strings.TrimSpace(s))
		return t.Hour()*60 + t.Minute(), err == nil
	}
	from, okA := clock(a)
	to, okB := clock(b)
	if !ok || !okA || !okB || to <= from {
		return 0, 0, fmt.Errorf("must be HH:MM-HH:MM with the end after the start, got %q", r.Hours)
	}
	return from, to, nil
}

// Threshold is what the rule's measure must exceed: a count, or for
// answer_p95 a duration in seconds. Errors say why Above is unreadable.
func (r AlertRule) Threshold() (float64, error) {
	switch r.When {
	case AlertAnswerP95:
		d, err := time.ParseDuration(r.Above)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("must be a positive duration such as 30s, got %q", r.Above)
		}
		return d.Seconds(), nil
	case AlertDeliveriesFailed, AlertRunsFailed, AlertBreakerOpenings, AlertDeliveryBacklog, AlertRefusedCallbacks:
		n, err := strconv.Atoi(r.Above)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("must be a count of 0 or more, got %q", r.Above)
		}
		return float64(n), nil
	case AlertSkillErrorRate:
		p, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(r.Above), "%"), 64)
		if err != nil || p < 0 || p >= 100 {
			return 0, fmt.Errorf("must be a percentage from 0 to under 100 such as 20%%, got %q", r.Above)
		}
		return p, nil
	case AlertBudget:
		p, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(r.Above), "%"), 64)
		if err != nil || p <= 0 || p > 1000 {
			return 0, fmt.Errorf("must be a share of the monthly budget above 0%% and at most 1000%% such as 80%%, got %q", r.Above)
		}
		return p, nil
	case AlertCostPerDay:
		v, err := strconv.ParseFloat(r.Above, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("must be an amount of 0 or more in costs.currency, got %q", r.Above)
		}
		return v, nil
	case AlertNoTraffic:
		return 0, nil
	}
	return 0, fmt.Errorf("no threshold for when %q", r.When)
}

func (c *AlertsConfig) applyDefaults() {
	for i := range c.Rules {
		r := &c.Rules[i]
		if r.Window == 0 { // a negative window stays for validate to name
			r.Window = defaultAlertWindow
			if r.When == AlertCostPerDay {
				r.Window = maxAlertWindow
			}
		}
		if r.When == AlertNoTraffic {
			setDefault(&r.Hours, defaultWorkingHours)
		}
		if r.When == AlertNoTraffic || r.When == AlertBudget {
			setDefault(&r.TZ, "Asia/Shanghai")
		}
		setDefault(&r.To.ChatType, "group")
	}
	fillWords(reflect.ValueOf(&c.Messages).Elem(), reflect.ValueOf(DefaultAlertMessages))
}

// validate reports the section's problems to bad, naming the key;
// budgets are costs.budgets, which budget rules name.
func (c *AlertsConfig) validate(budgets map[string]float64, bad func(key, format string, args ...any)) {
	if len(c.Rules) > MaxAlertRules {
		bad("alerts.rules", "at most %d rules, got %d", MaxAlertRules, len(c.Rules))
	}
	seen := map[string]bool{}
	for i, r := range c.Rules {
		key := fmt.Sprintf("alerts.rules[%d]", i)
		switch {
		case r.Name == "":
			bad(key+".name", "required")
		case len(r.Name) > maxAlertNameLen:
			bad(key+".name", "at most %d bytes, got %d", maxAlertNameLen, len(r.Name))
		case seen[r.Name]:
			bad(key+".name", "%q is the name of an earlier rule", r.Name)
		}
		seen[r.Name] = true
		switch {
		case !slices.Contains(alertMeasures, r.When):
			bad(key+".when", "must be one of %s, got %q", strings.Join(alertMeasures, ", "), r.When)
		case r.When == AlertNoTraffic:
			if _, _, err := r.WorkingHours(); err != nil {
				bad(key+".hours", "%s", err)
			}
			if _, err := time.LoadLocation(r.TZ); err != nil {
				bad(key+".tz", "unknown time zone %q", r.TZ)
			}
		default:
			if _, err := r.Threshold(); err != nil {
				bad(key+".above", "%s", err)
			}
		}
		if r.When == AlertBudget {
			if _, err := time.LoadLocation(r.TZ); err != nil {
				bad(key+".tz", "unknown time zone %q", r.TZ)
			}
			if _, ok := budgets[r.Account]; !ok {
				bad(key+".account", "must be an account of costs.budgets (channel/account), got %q", r.Account)
			}
		}
		if r.Window < minAlertWindow || r.Window > maxAlertWindow {
			bad(key+".window", "must be between %s and %s, got %s", minAlertWindow, maxAlertWindow, r.Window)
		}
		for _, f := range []struct{ name, v string }{{"channel", r.To.Channel}, {"account", r.To.Account}, {"chat_id", r.To.ChatID}} {
			if f.v == "" {
				bad(key+".to."+f.name, "required")
			}
		}
		if r.To.ChatType != "group" && r.To.ChatType != "single" {
			bad(key+".to.chat_type", "must be group or single, got %q", r.To.ChatType)
		}
	}
	checkWords("alerts.messages", reflect.ValueOf(c.Messages), reflect.ValueOf(DefaultAlertMessages), bad)
}
