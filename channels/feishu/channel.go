package feishu

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/hermes-gw/hermes/channels"
)

// Channel is Feishu: every configured app, each an account of its own.
type Channel struct {
	apps map[string]*App
	env  channels.Env
}

var (
	_ channels.HTTPReceiver   = (*Channel)(nil)
	_ channels.StreamReceiver = (*Channel)(nil)
	_ channels.Directory      = (*Channel)(nil)
)

func newChannel(env channels.Env) *Channel {
	return &Channel{apps: map[string]*App{}, env: env}
}

// Name returns ChannelName.
func (c *Channel) Name() string { return ChannelName }

// Limits are an app's message limits: markdown in a post (or the streaming
// card, live until stream_deadline: stream.go), paced per chat as Feishu
// paces bots; images uploaded (media.go).
func (c *Channel) Limits(account string) channels.Limits {
	lim := channels.Limits{
		MaxBytes: MaxPartBytes, Format: channels.FormatMarkdown, Dialect: channels.DialectStandard,
		PerMinute: SendsPerMinute, AccountPerMinute: AppSendsPerMinute, Images: true,
	}
	if a, ok := c.apps[account]; ok && a.cfg.Streaming {
		lim.Streams, lim.LiveInterval, lim.LiveDeadline = true, a.streamPoll, a.cfg.StreamDeadline
	} else {
		// An answer may be a card (cards.go): its markdown element renders
		// what a post's md element does, and it can carry rating buttons.
		// A streamed answer is the streaming card already.
		lim.CardAnswers = true
	}
	return lim
}

// Send delivers one part through the app named out.Account; see App.Send.
func (c *Channel) Send(ctx context.Context, out channels.Outbound) (channels.SendResult, error) {
	a, ok := c.apps[out.Account]
	if !ok {
		return channels.SendResult{}, fmt.Errorf("feishu: unknown account %q: %w", out.Account, channels.ErrPermanent)
	}
	return a.Send(ctx, out)
}

// Routes are the event URLs /feishu/<name>/events of the apps in http mode.
func (c *Channel) Routes(sink channels.Sink) []channels.Route {
	var routes []channels.Route
	for _, name := range c.names() {
		a := c.apps[name]
		if a.cfg.Mode != ModeHTTP {
			continue
		}
		routes = append(routes, channels.Route{
			Method: http.MethodPost, Path: "/feishu/" + name + "/events",
			Handler: func(w http.ResponseWriter, r *http.Request) { a.serveEvents(w, r, sink) },
		})
	}
	return routes
}

// Connections are the long connections of the apps in websocket mode. They
// are not exclusive: Feishu hands each event to one of an app's
// connections at random, and any replica can answer any message (the
// outbox and the reply API need no socket).
func (c *Channel) Connections() []channels.Connection {
	var conns []channels.Connection
	for _, name := range c.names() {
		a := c.apps[name]
		if a.cfg.Mode != ModeWebSocket {
			continue
		}
		conns = append(conns, channels.Connection{Account: name, Exclusive: false, Run: a.runConnection, Backoff: a.ws.backoff})
	}
	return conns
}

// Departments returns the department ids of userID (of the configured
// id type), cached for ten minutes, for skill access rules.
func (c *Channel) Departments(ctx context.Context, account, userID string) ([]string, error) {
	a, ok := c.apps[account]
	if !ok {
		return nil, fmt.Errorf("feishu: unknown account %q", account)
	}
	return a.departments(ctx, userID)
}

// App returns the app named name (tests).
func (c *Channel) App(name string) (*App, bool) {
	a, ok := c.apps[name]
	return a, ok
}

// names are the account names in a stable order.
func (c *Channel) names() []string {
	names := make([]string, 0, len(c.apps))
	for n := range c.apps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// pathEscape escapes an id for a URL path segment.
func pathEscape(s string) string { return url.PathEscape(s) }
