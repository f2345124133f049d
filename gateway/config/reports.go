package config

import (
	"time"

	"github.com/hermes-gw/hermes/gateway/reports/schedule"
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
	// MinInterval is the shortest time between two fires of a report an
	// employee creates in chat, default 1h, from 1m to 168h: a schedule
	// two of whose coming fires (over the next year) are closer is refused.
	// Reports an admin creates are not held to it.
	MinInterval time.Duration `yaml:"min_interval"`
	// MaxPerUser is how many reports one employee may create in chat,
	// default 10, at most 1000. Reports an admin creates do not count.
	MaxPerUser int `yaml:"max_per_user"`
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
	// TooFrequent refuses a schedule under reports.min_interval: %s the
	// minimum, %s and %s two fire times, %s the time between them.
	TooFrequent string `yaml:"too_frequent"`
	// TooMany refuses a report over reports.max_per_user: %d the limit.
	TooMany string `yaml:"too_many"`
	// WriteSkill refuses, in a report made in chat, a skill that changes
	// data and does not allow it (reports: allow); %s the skill.
	WriteSkill string `yaml:"write_skill"`
	// FirstContact refuses a target the bot may not push to yet (it may
	// push only into chats that wrote to it first); %s the chat id.
	FirstContact string `yaml:"first_contact"`
	// RunRefused tells the owner a run was refused because the owner may
	// no longer run the report's skill that way (access by the owner's
	// departments now, or a write skill): %s name, %s skill.
	RunRefused string `yaml:"run_refused"`
	// Schedule is how a schedule, its weekdays and a duration are said.
	Schedule schedule.Words `yaml:"schedule"`
}

// DefaultReportMessages are the Chinese defaults of ReportMessages.
var DefaultReportMessages = ReportMessages{
	ConfirmCreate: "创建定时报告「%s」：%s，发送到%s。接下来三次发送时间：%s",
	ConfirmDelete: "删除定时报告「%s」",
	Created:       "定时报告「%s」已创建（编号 %d）。",
	Deleted:       "定时报告「%s」已删除。",
	ThisChat:      "本会话",
	Me:            "你的私聊",
	TooFrequent:   "定时报告两次发送之间至少要隔 %s；按这个时间，%s 和 %s 两次发送只隔 %s。请换一个间隔更长的时间。",
	TooMany:       "每人最多可以在对话中创建 %d 个定时报告，你已经有这么多了。请先删除不再需要的报告。",
	WriteSkill:    "技能「%s」会修改数据，只能在管理员创建的定时报告里使用，不能在对话中设置为定时执行。可以改用查询类的技能，或联系管理员。",
	FirstContact:  "机器人只能向先给它发过消息的会话主动发送，会话 %s 还没有给机器人发过消息。请先在那个会话里给机器人发一条消息，再创建报告。",
	RunRefused:    "你的定时报告「%s」这次没有发送：你现在不能在定时报告中使用技能「%s」（权限按你现在的部门计算，或该技能的设置已改变）。如仍需要，请联系管理员。",
	Schedule:      schedule.DefaultWords,
}

const (
	defaultReportScan   = 5 * time.Second
	defaultMisfireGrace = time.Minute
	defaultReportTZ     = "Asia/Shanghai"
	defaultMaxTargets   = 500
	defaultMinInterval  = time.Hour
	defaultMaxPerUser   = 10
	// Bounds of reports.min_interval: below a minute a report is a flood,
	// above a week no weekly report could be made.
	minMinInterval = time.Minute
	maxMinInterval = 7 * 24 * time.Hour
	maxMaxPerUser  = 1000
)

func (c *ReportsConfig) applyDefaults() {
	positive(&c.ScanInterval, defaultReportScan)
	positive(&c.MisfireGrace, defaultMisfireGrace)
	positive(&c.MaxTargets, defaultMaxTargets)
	// Zero is "not set"; a negative value stays for validate to name.
	if c.MinInterval == 0 {
		c.MinInterval = defaultMinInterval
	}
	if c.MaxPerUser == 0 {
		c.MaxPerUser = defaultMaxPerUser
	}
	setDefault(&c.TimeZone, defaultReportTZ)
}

// validate reports the section's problems to bad, naming the key.
func (c *ReportsConfig) validate(bad func(key, format string, args ...any)) {
	if _, err := schedule.Parse("0 9 * * 1", c.TimeZone); err != nil {
		bad("reports.time_zone", "%q is not an IANA time zone such as Asia/Shanghai", c.TimeZone)
	}
	if c.MinInterval < minMinInterval || c.MinInterval > maxMinInterval {
		bad("reports.min_interval", "must be between %s and %s, got %s", minMinInterval, maxMinInterval, c.MinInterval)
	}
	if c.MaxPerUser < 1 || c.MaxPerUser > maxMaxPerUser {
		bad("reports.max_per_user", "must be between 1 and %d, got %d", maxMaxPerUser, c.MaxPerUser)
	}
}
