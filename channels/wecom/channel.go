package wecom

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
)

// Channel is WeCom: every configured self-built app and AI bot, each an
// account of its own (names are unique across both).
type Channel struct {
	apps map[string]*App
	bots map[string]*aibot.Bot
	now  func() time.Time
	log  *slog.Logger
}

var (
	_ channels.HTTPReceiver   = (*Channel)(nil)
	_ channels.StreamReceiver = (*Channel)(nil)
	_ channels.Directory      = (*Channel)(nil)
)

// NewChannel returns the channel for apps, keyed by App.Name (tests and
// programs that build apps themselves; hermes.yaml goes through Platform).
func NewChannel(apps ...*App) *Channel {
	c := &Channel{apps: make(map[string]*App, len(apps)), bots: map[string]*aibot.Bot{}, now: time.Now, log: slog.Default()}
	for _, a := range apps {
		c.apps[a.name] = a
	}
	return c
}

// WithBots adds AI bots to the channel, keyed by Bot.Name (names are unique
// across apps and bots), and returns c.
func (c *Channel) WithBots(bots ...*aibot.Bot) *Channel {
	for _, b := range bots {
		c.bots[b.Name()] = b
	}
	return c
}

// Name returns ChannelName.
func (c *Channel) Name() string { return ChannelName }

// Limits are an app's or a bot's message limits.
func (c *Channel) Limits(account string) channels.Limits {
	if b, ok := c.bots[account]; ok {
		return b.Limits()
	}
	// Apps send text: markdown is not shown in WeChat (微信) for users who
	// read their WeCom messages there.
	return channels.Limits{MaxBytes: MaxTextBytes, Format: channels.FormatText, Dialect: channels.DialectNone,
		PerMinute: AppSendsPerUserPerMinute, Images: true}
}

// Send delivers one part through the app or bot named out.Account.
func (c *Channel) Send(ctx context.Context, out channels.Outbound) (channels.SendResult, error) {
	if b, ok := c.bots[out.Account]; ok {
		return b.Send(ctx, out)
	}
	a, ok := c.apps[out.Account]
	if !ok {
		return channels.SendResult{}, fmt.Errorf("wecom: unknown account %q: %w", out.Account, channels.ErrPermanent)
	}
	return a.Send(ctx, out)
}

// Routes are the callback URLs: /wecom/<app>/callback for each app and
// /wecom/bot/<bot>/callback for each bot in callback mode.
func (c *Channel) Routes(sink channels.Sink) []channels.Route {
	var routes []channels.Route
	for _, a := range c.apps {
		routes = append(routes, a.routes(sink)...)
	}
	for _, b := range c.bots {
		routes = append(routes, b.Routes(sink)...)
	}
	return routes
}

var _ channels.LiveReplier = (*Channel)(nil)

// Open opens the live reply of the message out.ReplyTo names: the stream
// of a websocket-mode bot (aibot.Bot.Open). Apps and callback-mode bots
// have none (an error wrapping channels.ErrPermanent).
func (c *Channel) Open(ctx context.Context, out channels.Outbound) (channels.Live, error) {
	b, ok := c.bots[out.Account]
	if !ok {
		return nil, fmt.Errorf("wecom: account %q has no live replies: %w", out.Account, channels.ErrPermanent)
	}
	return b.Open(ctx, out)
}

// Connections are the long connections of the bots in websocket mode: one
// per bot across all replicas, as WeCom allows.
func (c *Channel) Connections() []channels.Connection {
	var conns []channels.Connection
	for _, b := range c.bots {
		if conn, ok := b.Connection(); ok {
			conns = append(conns, conn)
		}
	}
	return conns
}

// Departments returns the ids of the departments userID belongs to, for
// skill access rules (WeCom's message callback does not carry them). Only
// apps can look them up; bots have no address-book access.
func (c *Channel) Departments(ctx context.Context, account, userID string) ([]string, error) {
	a, ok := c.apps[account]
	if !ok {
		return nil, fmt.Errorf("wecom: account %q cannot read the address book", account)
	}
	return a.departments(ctx, userID)
}

var _ channels.MediaFetcher = (*Channel)(nil)

// FetchMedia fetches an attachment of a message an app or an AI bot
// received.
func (c *Channel) FetchMedia(ctx context.Context, account string, ref channels.MediaRef, limit int64) (channels.Attachment, error) {
	if a, ok := c.apps[account]; ok {
		return a.fetchMedia(ctx, ref, limit)
	}
	b, ok := c.bots[account]
	if !ok {
		return channels.Attachment{}, fmt.Errorf("%w: account %q fetches no media", channels.ErrMediaRefused, account)
	}
	return b.FetchMedia(ctx, ref, limit)
}
