package gateway

import (
	"time"

	"github.com/hermes-gw/hermes/gateway/reports"
)

// ReportsConfig is the `reports:` section: how scheduled reports are
// ticked.
type ReportsConfig struct {
	// ScanInterval is how often each replica looks for due ticks, default
	// 5s: a tick fires at most this late. Claims in Postgres keep one run
	// per tick however many replicas scan.
	ScanInterval time.Duration `yaml:"scan_interval"`
	// MisfireGrace: a tick found later than this after its time was missed
	// (every replica was down) and runs once or is skipped per the report's
	// catch_up. Default 1m.
	MisfireGrace time.Duration `yaml:"misfire_grace"`
	// TimeZone of reports created without one, default Asia/Shanghai.
	TimeZone string `yaml:"time_zone"`
	// MaxTargets bounds the chats of one report, default 500.
	MaxTargets int `yaml:"max_targets"`
}

// ReportMessages are the sentences of report management, Chinese by
// default (messages.reports).
type ReportMessages struct {
	// ConfirmCreate asks for 「确认」 before a report is created: %s name,
	// %s schedule in words, %s targets, %s next three fire times.
	ConfirmCreate string `yaml:"confirm_create"`
	// ConfirmDelete asks before a report is deleted; %s is its name.
	ConfirmDelete string `yaml:"confirm_delete"`
	Created       string `yaml:"created"` // a report was created; %s name, %s id
	Deleted       string `yaml:"deleted"` // a report was deleted; %s name
	ThisChat      string `yaml:"this_chat"`
	Me            string `yaml:"me"`
}

// DefaultReportMessages are the Chinese defaults of ReportMessages.
var DefaultReportMessages = ReportMessages{
	ConfirmCreate: "创建定时报告「%s」：%s，发送到%s。接下来三次发送时间：%s",
	ConfirmDelete: "删除定时报告「%s」",
	Created:       "定时报告「%s」已创建（编号 %d）。",
	Deleted:       "定时报告「%s」已删除。",
	ThisChat:      "本会话",
	Me:            "你的私聊",
}

const (
	defaultReportScan   = 5 * time.Second
	defaultMisfireGrace = time.Minute
	defaultReportTZ     = "Asia/Shanghai"
	defaultMaxTargets   = 500
)

func (c *ReportsConfig) applyDefaults(m *ReportMessages) {
	positive(&c.ScanInterval, defaultReportScan)
	positive(&c.MisfireGrace, defaultMisfireGrace)
	positive(&c.MaxTargets, defaultMaxTargets)
	setDefault(&c.TimeZone, defaultReportTZ)
	d := DefaultReportMessages
	for _, f := range []struct {
		p *string
		v string
	}{
		{&m.ConfirmCreate, d.ConfirmCreate}, {&m.ConfirmDelete, d.ConfirmDelete}, {&m.Created, d.Created},
		{&m.Deleted, d.Deleted}, {&m.ThisChat, d.ThisChat}, {&m.Me, d.Me},
	} {
		setDefault(f.p, f.v)
	}
}

// validate reports the section's problems to bad, naming the key.
func (c *ReportsConfig) validate(bad func(key, format string, args ...any)) {
	if _, err := reports.ParseSchedule("0 9 * * 1", c.TimeZone); err != nil {
		bad("reports.time_zone", "%q is not an IANA time zone such as Asia/Shanghai", c.TimeZone)
	}
}
