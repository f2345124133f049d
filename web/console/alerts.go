package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/gateway/alerts"
	"github.com/hermes-gw/hermes/gateway/store"
)

// alertFirings is how many incidents the alerts page shows per rule.
const alertFirings = 5

// silenceChoices are the durations the alerts page offers, in its form.
var silenceChoices = []time.Duration{time.Hour, 4 * time.Hour, 24 * time.Hour}

type alertsData struct {
	List    []alerts.RuleState
	Choices []time.Duration
	Now     time.Time
	Error   string
}

// alertsPage lists every alert rule: its measure and threshold, whether it
// is firing (since when) or silenced (until when, by whom), and its latest
// incidents.
func (c *Console) alertsPage(w http.ResponseWriter, r *request) {
	c.renderAlerts(w, r, http.StatusOK, "")
}

func (c *Console) renderAlerts(w http.ResponseWriter, r *request, status int, problem string) {
	d := alertsData{Choices: silenceChoices, Now: c.deps.Now(), Error: problem}
	err := c.deps.Store.InTx(r.Context(), func(q store.Querier) error {
		var err error
		d.List, err = alerts.States(r.Context(), q, c.deps.AlertRules, alertFirings)
		return err
	})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, "alerts", "", status, d)
}

// silenceAlert silences a rule for one of silenceChoices (or lifts its
// silence: for=0), recorded under the signed-in account with its reason.
func (c *Console) silenceAlert(w http.ResponseWriter, r *request) {
	rule := r.PostFormValue("rule")
	d, err := time.ParseDuration(r.PostFormValue("for"))
	if err != nil || d < 0 || d > alerts.MaxSilence {
		c.renderAlerts(w, r, http.StatusBadRequest, r.t["alerts_bad_duration"])
		return
	}
	now := c.deps.Now()
	var until time.Time
	if d > 0 {
		until = now.Add(d)
	}
	err = c.deps.Store.InTx(r.Context(), func(q store.Querier) error {
		return alerts.Silence(r.Context(), q, c.deps.AlertRules, rule, until, r.session.Username, strings.TrimSpace(r.PostFormValue("reason")), now)
	})
	if errors.Is(err, alerts.ErrUnknownRule) {
		c.renderAlerts(w, r, http.StatusNotFound, r.t["alerts_unknown_rule"])
		return
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.deps.Logger.Info("console: alert silenced", "admin", r.session.Username, "rule", rule, "until", until)
	http.Redirect(w, r.Request, Prefix+"/alerts", http.StatusSeeOther)
}
