package gateway

import (
	"context"
	"net/http"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/web/console"
)

// consoleHandler is the operator's console over this gateway's store,
// skills and channels.
func (g *Gateway) consoleHandler() http.Handler {
	list := make([]channels.Channel, 0, len(g.channels))
	for _, ch := range g.channels {
		list = append(list, ch)
	}
	return console.New(console.Deps{
		Pool: g.pool, Skills: g.skills.Load, CheckSkills: g.checkSkills, ReloadSkills: g.ReloadSkills,
		Channels: list, Now: g.now, Logger: g.log,
		RunReportNow: func(ctx context.Context, id int64) (int64, error) { return g.RunReportNow(ctx, id, nil) },
		PauseReport:  g.pauseReport,
	})
}

// pauseReport pauses or resumes report id for the operator (any owner's),
// as `hermes reports pause|resume` does.
func (g *Gateway) pauseReport(ctx context.Context, id int64, paused bool) error {
	return store.SetReportPaused(ctx, g.pool, id, nil, paused, g.now())
}

// checkSkills runs `hermes skills check` over the skill folder with this
// gateway's settings.
func (g *Gateway) checkSkills() []skills.Finding {
	if g.skillsFS == nil {
		return nil
	}
	return skills.Check(g.skillsFS, skills.CheckOptions{
		RunBudget: g.cfg.Agent.RunTimeout, BaseURL: g.cfg.Skills.BaseURL,
		DefaultHMACKeyEnv: g.cfg.Skills.IdentityKey.Env, CommandAllowList: g.cfg.Skills.CommandAllowList,
	})
}
