package gateway

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// buildChannels builds the channel of every platform section of the
// configuration, then adds the caller's own channels. A section no
// platform claims is an error naming the key.
func (g *Gateway) buildChannels(ctx context.Context, platforms []channels.Platform, extra []channels.Channel) error {
	known := map[string]channels.Platform{}
	for _, p := range platforms {
		known[p.Name] = p
	}
	keys := make([]string, 0, len(g.cfg.Platforms))
	for k := range g.cfg.Platforms {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := channels.Env{
		TokenCache: func(secret string) (channels.TokenCache, error) {
			return store.NewTokenCache(g.pool, secret, g.now)
		},
		Now:    g.now,
		Logger: g.log,
		Messages: channels.ChannelMessages{
			Welcome: g.cfg.Messages.Welcome, Thinking: g.cfg.Messages.Thinking, Later: g.cfg.Messages.Later,
			Title: g.cfg.Messages.Title,
		},
		Panicked:     g.metrics.Panicked,
		FetchRefused: g.metrics.FetchRefused,
	}
	for _, key := range keys {
		p, ok := known[key]
		if !ok {
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range known {
					if !yield(n) {
						return
					}
				}
			})
			return fmt.Errorf("config: unknown key %s (platforms: %s)", key, strings.Join(names, ", "))
		}
		node := g.cfg.Platforms[key]
		ch, err := p.New(ctx, config.DecodeSection(key, &node), env)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		g.channels[ch.Name()] = ch
	}
	for _, ch := range extra {
		g.channels[ch.Name()] = ch
	}
	for name, ch := range g.channels {
		if sr, ok := ch.(channels.StreamReceiver); ok {
			for _, c := range sr.Connections() {
				if c.Exclusive {
					g.jobs.exclusive[name+"/"+c.Account] = "connection-" + name + "-" + c.Account
				}
			}
		}
	}
	return nil
}
