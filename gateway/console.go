package gateway

import (
	"context"
	"errors"
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
	reps, _ := FeatureOf[reportConsole](g.features)
	return console.New(console.Deps{
		Pool: g.pool, Skills: g.skills.Load, CheckSkills: g.checkSkills, ReloadSkills: g.ReloadSkills,
		Channels: list, Now: g.now, Logger: g.log,
		RunReportNow: func(ctx context.Context, id int64) (int64, error) {
			if reps == nil {
				return 0, errNoReports
			}
			return reps.RunReportNow(ctx, id, nil)
		},
		PauseReport: func(ctx context.Context, id int64, paused bool) error {
			if reps == nil {
				return errNoReports
			}
			return reps.PauseReport(ctx, id, nil, paused)
		},
	})
}

// reportConsole is what the console asks of the reports feature
// (gateway/reports, which the gateway does not import): running and
// pausing any owner's report, as the operator (owner nil).
type reportConsole interface {
	Feature
	RunReportNow(ctx context.Context, id int64, owner *store.ReportOwner) (int64, error)
	PauseReport(ctx context.Context, id int64, owner *store.ReportOwner, paused bool) error
}

// errNoReports: the console was asked to run or pause a report on a
// gateway wired without the reports feature.
var errNoReports = errors.New("gateway: the reports feature is not wired")

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
