package admin

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/web"
	"github.com/hermes-gw/hermes/web/console"
)

// Feature is the operators' pages.
type Feature struct {
	reports Reports
	s       gateway.Services
}

// New is the operators' pages, whose console acts on reports through
// reports (nil: it refuses to, with errNoReports).
func New(reports Reports) *Feature {
	if reports == nil {
		reports = noReports{}
	}
	return &Feature{reports: reports}
}

// Attach implements gateway.Feature.
func (f *Feature) Attach(s gateway.Services) error {
	f.s = s
	if err := console.CheckTexts(s.Config.Messages.Console); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// Routes implements gateway.RouteFeature: only admin ones.
func (f *Feature) Routes(_, admin gin.IRouter) {
	admin.GET("/", gin.WrapH(web.StatusHandler(f.status)))
	admin.Any(console.Prefix+"/*path", gin.WrapH(f.console()))
}

// console is the operator's console over the gateway's store, skills and
// channels.
func (f *Feature) console() *console.Console {
	s := f.s
	var kb console.KnowledgeBase
	if s.Config.Knowledge.On() {
		kb = knowledge.BaseOf(s)
	}
	return console.New(console.Deps{
		Store: store.NewConsole(s.Pool), Skills: s.Skills.Load, CheckSkills: f.checkSkills, ReloadSkills: s.ReloadSkills,
		Channels: s.Channels, Now: s.Now, Logger: s.Log,
		RunReportNow: f.reports.RunReportNow, PauseReport: f.reports.PauseReport,
		Texts: s.Config.Messages.Console, When: s.Config.Messages.Reports.Schedule, Costs: s.Config.Costs,
		AlertRules: s.Config.Alerts.Rules, Knowledge: kb,
	})
}

// checkSkills runs `hermes skills check` over the skill folder with the
// gateway's settings.
func (f *Feature) checkSkills() []skills.Finding {
	if f.s.SkillsFS == nil {
		return nil
	}
	cfg := f.s.Config
	return skills.Check(f.s.SkillsFS, skills.CheckOptions{
		RunBudget: cfg.Agent.RunTimeout, BaseURL: cfg.Skills.BaseURL,
		DefaultHMACKeyEnv: cfg.Skills.IdentityKey.Env, CommandAllowList: cfg.Skills.CommandAllowList,
	})
}

// status is what the status page shows: no secrets, only names and paths.
func (f *Feature) status() web.Status {
	st := web.Status{Version: gateway.Version, Callbacks: f.s.Callbacks}
	for _, s := range f.s.Skills.Load().Skills() {
		st.Skills = append(st.Skills, s.Name)
	}
	return st
}
