package dingtalk

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// Channel is DingTalk: every configured robot, each an account of its own.
type Channel struct {
	robots map[string]*robot
}

var (
	_ channels.HTTPReceiver   = (*Channel)(nil)
	_ channels.StreamReceiver = (*Channel)(nil)
	_ channels.Directory      = (*Channel)(nil)
)

// robot is one configured robot with its API client.
type robot struct {
	cfg    RobotSection
	window time.Duration
	api    *api
	now    func() time.Time
	log    *slog.Logger
	dir    directory
	// backoff paces the stream connection's reconnects
	// (channels.Reconnect); the zero value is channels.DefaultBackoff.
	backoff channels.Backoff
	// env counts recovered panics (channels.Env.CountPanic).
	env channels.Env
	// webhook POSTs to the session webhooks messages carry: through the
	// fetch guard, to the configured API hosts only (webhook.go).
	webhook *http.Client
	// onFrame, when set (tests only), is called with each robot message
	// frame on the goroutine that handles it, before it is decoded: a test
	// makes it panic to prove the guard over a real socket, since no
	// decoder of ours is known to panic.
	onFrame func(data string)
}

func newRobot(s RobotSection, window time.Duration, tokens channels.TokenCache, env channels.Env) *robot {
	log := env.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("channel", ChannelName, "account", s.Name)
	now := env.Now
	if now == nil {
		now = time.Now
	}
	return &robot{
		cfg: s, window: window, now: now, log: log,
		api: &api{
			base: s.APIBaseURL, oapi: s.OAPIBaseURL, appKey: s.AppKey, appSecret: s.AppSecret,
			tokens: tokens, http: &http.Client{Timeout: defaultHTTPTimeout}, log: log,
		},
		dir:     directory{entries: map[string]dirEntry{}},
		env:     env,
		webhook: webhookClient(s, env, log),
	}
}

// countPanic counts err if it is a recovered panic (guard.ErrPanic) and
// reports whether it was one.
func (r *robot) countPanic(err error) bool { return r.env.CountPanic(ChannelName, r.cfg.Name, err) }

// Name returns ChannelName.
func (c *Channel) Name() string { return ChannelName }

// Limits are a robot's message limits: markdown, split under
// MaxMarkdownBytes, paced to GroupMessagesPerMinute; streamed live into an
// AI card (card.go) every card_interval until stream_deadline when the
// robot has a card template.
func (c *Channel) Limits(account string) channels.Limits {
	// DingTalk's markdown draws headings, bold, links, images and lists but
	// no tables: the WeCom dialect turns tables into lines the same way.
	// Images are uploaded and sent through the robot OpenAPI (media.go).
	lim := channels.Limits{
		MaxBytes: MaxMarkdownBytes, Format: channels.FormatMarkdown, Dialect: channels.DialectBasic,
		PerMinute: GroupMessagesPerMinute, Images: true,
	}
	if r, ok := c.robots[account]; ok && r.cfg.CardTemplateID != "" {
		lim.Streams, lim.LiveInterval, lim.LiveDeadline = true, r.cfg.CardInterval, r.cfg.StreamDeadline
	} else if ok && r.cardsOn() {
		// The button template draws a markdown body: an answer may be a
		// button card too, with the rating buttons (cards.go).
		lim.CardAnswers = true
	}
	return lim
}

// Send delivers one part through the robot named out.Account (see
// robot.send for the errors).
func (c *Channel) Send(ctx context.Context, out channels.Outbound) (channels.SendResult, error) {
	r, ok := c.robots[out.Account]
	if !ok {
		return channels.SendResult{}, fmt.Errorf("dingtalk: unknown account %q: %w", out.Account, channels.ErrPermanent)
	}
	return r.send(ctx, out)
}

// Routes are the callback URLs /dingtalk/<name>/callback of the robots in
// http mode.
func (c *Channel) Routes(sink channels.Sink) []channels.Route {
	var routes []channels.Route
	for _, r := range c.robots {
		if r.cfg.Mode == ModeHTTP {
			routes = append(routes, r.route(sink))
		}
	}
	return routes
}

// Connections are the stream connections of the robots in stream mode,
// and of those in http mode that send button cards (their taps' only
// verified path: cards.go cardsOn). DingTalk spreads a client's messages
// over all its connections, so every replica keeps one (not Exclusive).
func (c *Channel) Connections() []channels.Connection {
	var conns []channels.Connection
	for _, r := range c.robots {
		if r.cfg.Mode == ModeStream || r.cardsOn() {
			conns = append(conns, channels.Connection{Account: r.cfg.Name, Run: r.runStream, Backoff: r.backoff})
		}
	}
	return conns
}

// Departments returns the ids of the departments userID belongs to, for
// skill access rules; looked up through the user API and cached.
func (c *Channel) Departments(ctx context.Context, account, userID string) ([]string, error) {
	r, ok := c.robots[account]
	if !ok {
		return nil, fmt.Errorf("dingtalk: unknown account %q", account)
	}
	return r.departments(ctx, userID)
}
