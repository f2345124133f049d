package wecom

import (
	"context"
	"fmt"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// Bot is one AI bot (智能机器人). Placeholder until the AI bot lands.
type Bot struct {
	cfg BotSection
}

// NewBot builds a bot from its section.
func NewBot(s BotSection, window time.Duration, env channels.Env) (*Bot, error) {
	return &Bot{cfg: s}, nil
}

func (b *Bot) limits() channels.Limits {
	return channels.Limits{MaxBytes: 20480, Format: channels.FormatMarkdown, Dialect: channels.DialectWeCom}
}

// Send is not implemented yet.
func (b *Bot) Send(ctx context.Context, out channels.Outbound) (channels.SendResult, error) {
	return channels.SendResult{}, fmt.Errorf("wecom: bot %q: not implemented: %w", b.cfg.Name, channels.ErrPermanent)
}

func (b *Bot) routes(sink channels.Sink) []channels.Route { return nil }

func (b *Bot) connection() (channels.Connection, bool) { return channels.Connection{}, false }
