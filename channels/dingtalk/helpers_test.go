package dingtalk

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

const (
	testAppKey    = "dingtestappkey"
	testAppSecret = "test-app-secret-0123456789"
	testCorpID    = "dingcorp0001"
)

// clock is the tests' settable clock.
type clock = chantest.Clock

func newClock() *clock { return chantest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)) }

var errDown = errors.New("postgres down")

// testRobot is a robot against fake with clock c and cache tokens.
func testRobot(t *testing.T, fake *dingtalktest.Server, c *clock, tokens channels.TokenCache, edit func(*RobotSection)) *robot {
	t.Helper()
	s := RobotSection{Name: "hr-bot", AppKey: testAppKey, AppSecret: testAppSecret, CorpID: testCorpID,
		APIBaseURL: fake.URL(), OAPIBaseURL: fake.URL()}
	if edit != nil {
		edit(&s)
	}
	cfg := Config{Robots: []RobotSection{s}}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if tokens == nil {
		tokens = chantest.NewTokenCache()
	}
	r := newRobot(cfg.Robots[0], cfg.TimestampWindow, tokens, channels.Env{
		Now: c.Now, Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
		Messages: channels.ChannelMessages{Thinking: "思考中…", Later: "（稍后发送）"},
	})
	r.backoff = channels.Backoff{Steps: []time.Duration{10 * time.Millisecond}, Stable: time.Hour}
	return r
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
