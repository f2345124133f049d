package dingtalk

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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

// memSink is an in-memory channels.Sink: it dedupes by message id like the
// gateway, and can be made to fail or to block until released.
type memSink struct {
	mu       sync.Mutex
	accepted []channels.Inbound
	calls    int // Accept calls that returned, failed or not
	seen     map[string]bool
	fail     error
	gate     chan struct{} // when set, Accept waits for it to close
	progress channels.Progress
	shown    []channels.MessageRef
	refused  []string // "account/check" of Refused calls
	changed  chan struct{}
}

func newMemSink() *memSink { return &memSink{seen: map[string]bool{}, changed: make(chan struct{})} }

func (s *memSink) Accept(ctx context.Context, in channels.Inbound) (channels.Receipt, error) {
	s.mu.Lock()
	gate, fail := s.gate, s.fail
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return channels.Receipt{}, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	s.calls++
	if fail != nil {
		return channels.Receipt{}, fail
	}
	if in.Nonce != "" && in.Sender.UserID == "" {
		return channels.Receipt{}, nil // a proof to claim, nothing to store
	}
	answer := in.ChatType == channels.ChatSingle || in.Mentioned
	if s.seen[in.MsgID] {
		return channels.Receipt{Answer: answer}, nil
	}
	s.seen[in.MsgID] = true
	s.accepted = append(s.accepted, in)
	return channels.Receipt{New: true, Answer: answer}, nil
}

func (s *memSink) Progress(ctx context.Context, ref channels.MessageRef) (channels.Progress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.progress
	p.Shown = len(s.shown) > 0
	return p, nil
}

func (s *memSink) Shown(ctx context.Context, ref channels.MessageRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shown = append(s.shown, ref)
	s.notifyLocked()
	return nil
}

func (s *memSink) setProgress(p channels.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progress = p
}

func (s *memSink) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

func (s *memSink) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *memSink) Accepted() []channels.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]channels.Inbound(nil), s.accepted...)
}

func (s *memSink) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *memSink) Shows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.shown)
}

// wait waits until cond holds, or fails the test when ctx ends.
func (s *memSink) wait(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for {
		s.mu.Lock()
		wake := s.changed
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-wake:
		}
	}
}

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

// Refused records account/check, as the gateway counts them.
func (s *memSink) Refused(_ context.Context, _, account, check string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, account+"/"+check)
}
