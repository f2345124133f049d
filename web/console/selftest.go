package console

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// selfTestTimeout bounds one self-test send.
const selfTestTimeout = 15 * time.Second

type selfTestData struct {
	Channels                 []string // channels that can run a self-test
	Channel, Account, Target string
	Result                   *channels.SelfTestResult
	Error                    string
	Refusal                  *refusalView // the account's newest refused callback
	// NothingReceived: no message and no refused callback of the account
	// ever reached Hermes.
	NothingReceived bool
}

// selfTesters are the gateway's channels that implement SelfTester, by name.
func (c *Console) selfTesters() map[string]channels.SelfTester {
	out := map[string]channels.SelfTester{}
	for _, ch := range c.deps.Channels {
		if st, ok := ch.(channels.SelfTester); ok {
			out[ch.Name()] = st
		}
	}
	return out
}

func (c *Console) selfTestNames() []string {
	var names []string
	for n := range c.selfTesters() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (c *Console) selfTestPage(w http.ResponseWriter, r *request) {
	c.render(w, r, "selftest", "", http.StatusOK, selfTestData{Channels: c.selfTestNames()})
}

// selfTest sends a test message through the chosen channel and account to
// the chosen user or chat and shows the platform's answer, explained.
func (c *Console) selfTest(w http.ResponseWriter, r *request) {
	d := selfTestData{Channels: c.selfTestNames(), Channel: r.PostFormValue("channel"),
		Account: strings.TrimSpace(r.PostFormValue("account")), Target: strings.TrimSpace(r.PostFormValue("target"))}
	status := http.StatusOK
	st, ok := c.selfTesters()[d.Channel]
	switch {
	case !ok:
		d.Error, status = c.texts[r.lang]["selftest_no_channel"], http.StatusBadRequest
	case d.Account == "" || d.Target == "":
		d.Error, status = c.texts[r.lang]["selftest_fill_in"], http.StatusBadRequest
	default:
		ctx, cancel := context.WithTimeout(r.Context(), selfTestTimeout)
		defer cancel()
		res, err := st.SelfTest(ctx, d.Account, d.Target)
		switch {
		case errors.Is(err, channels.ErrUnknownAccount):
			d.Error, status = c.texts[r.lang]["selftest_unknown_account"], http.StatusBadRequest
		case err != nil:
			d.Error = err.Error()
		default:
			d.Result = &res
		}
		if last, found, err := c.deps.Store.LastRefusal(r.Context(), d.Channel, d.Account); err != nil {
			c.deps.Logger.Warn("console: last refusal", "err", err)
		} else if found {
			d.Refusal = explainRefusal(r.t, last)
		} else if ever, err := c.deps.Store.EverReceived(r.Context(), d.Channel, d.Account); err == nil {
			d.NothingReceived = !ever
		}
		c.deps.Logger.Info("console: channel self-test", "user", r.session.Username, "channel", d.Channel,
			"account", d.Account, "target", d.Target, "ok", res.OK)
	}
	c.render(w, r, "selftest", fragmentFor(r, "selftest-result"), status, d)
}
