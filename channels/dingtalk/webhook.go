package dingtalk

import (
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"

	"github.com/hermes-gw/hermes/channels"
)

// A robot message carries its conversation's session webhook
// (sessionWebhook, https://oapi.dingtalk.com/robot/sendBySession?session=…,
// as DingTalk documents it): a URL from inbound bytes, which an HTTP
// callback's signature (over the timestamp only) does not cover. It is
// kept only on the configured API hosts (trustedWebhook), and POSTed to
// through the fetch guard: no redirect off those hosts, no connection to
// an internal address unless the configuration itself points DingTalk
// there.

// webhookTimeout bounds one session webhook POST, answer included.
const webhookTimeout = defaultHTTPTimeout

// webhookClient is the guarded client of s's session webhooks: the hosts
// of api_base_url and oapi_base_url (api.dingtalk.com and
// oapi.dingtalk.com by default). A base the operator set to plain http or
// to an internal address (an on-prem proxy, a test's fake) allows the
// same for its webhooks: that address comes from the configuration, not
// from a message.
func webhookClient(s RobotSection, env channels.Env, log *slog.Logger) *http.Client {
	var p channels.FetchPolicy
	for _, base := range []string{s.APIBaseURL, s.OAPIBaseURL} {
		u, err := url.Parse(base)
		if err != nil || u.Hostname() == "" {
			continue
		}
		p.Hosts = append(p.Hosts, u.Hostname())
		if u.Scheme == "http" || internalHost(u.Hostname()) {
			p.AllowPrivate = true
		}
	}
	g, err := env.FetchGuard(ChannelName, s.Name, p, log)
	if err != nil {
		// A base host the patterns do not take (an underscore in a
		// container's name): no webhook is trusted, replies go through the
		// OpenAPI.
		log.Warn("session webhooks disabled: the API base's host is not a plain host name", "err", err)
		g, _ = env.FetchGuard(ChannelName, s.Name, channels.FetchPolicy{}, log)
	}
	return g.Client(webhookTimeout)
}

// internalHost: localhost, or an address that is not public.
func internalHost(h string) bool {
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && channels.InternalAddr(a) != ""
}
