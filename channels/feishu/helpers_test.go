package feishu_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu"
)

// Test app credentials.
const (
	testAppID     = "cli_test0123456789"
	testSecret    = "test-app-secret-0123456789"
	testToken     = "test-verification-token"
	testEncrypt   = "test key" // the key of the official vectors
	testTenant    = "tenant-1"
	testAccount   = "bot-hr"
	testUserOpen  = "ou_zhangsan"
	testUserID    = "zhangsan"
	testChatP2P   = "oc_p2p_1"
	testChatGroup = "oc_group_1"
)

// newChannel builds the channel from a `feishu:` section in YAML, as the
// gateway does, with env's clock and an in-memory token cache unless given.
func newChannel(t testing.TB, section string, env channels.Env) *feishu.Channel {
	t.Helper()
	if env.TokenCache == nil {
		cache := chantest.NewTokenCache()
		env.TokenCache = func(string) (channels.TokenCache, error) { return cache, nil }
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Logger == nil {
		env.Logger = testLogger(t)
	}
	decode := func(v any) error {
		dec := yaml.NewDecoder(bytes.NewReader([]byte(section)))
		dec.KnownFields(true)
		return dec.Decode(v)
	}
	ch, err := feishu.Platform.New(context.Background(), decode, env)
	if err != nil {
		t.Fatal(err)
	}
	return ch.(*feishu.Channel)
}

// appYAML is one app's section pointing at base; extra lines are appended
// to the app.
func appYAML(base, mode, extra string) string {
	return "apps:\n  - name: " + testAccount + "\n    mode: " + mode + "\n    app_id: " + testAppID +
		"\n    app_secret: " + testSecret + "\n    verification_token: " + testToken +
		"\n    encrypt_key: " + testEncrypt + "\n    domain: " + base + "\n" + extra
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func withTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// memSink is an in-memory Sink: it dedupes by message id like the
// gateway's unique key, answers messages it would answer (not events,
// group messages only when mentioned) and serves scripted progress.
type memSink struct {
	mu       sync.Mutex
	accepted []channels.Inbound // new ones
	calls    int
	seen     map[string]bool
	fail     error
	progress func(n int) channels.Progress // n counts Progress calls from 1
	polls    int
	shown    []channels.MessageRef
	refused  []string // "account/check" of Refused calls
	changed  chan struct{}
}

func newMemSink() *memSink { return &memSink{seen: map[string]bool{}, changed: make(chan struct{})} }

func (s *memSink) Accept(_ context.Context, in channels.Inbound) (channels.Receipt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	s.calls++
	if s.fail != nil {
		return channels.Receipt{}, s.fail
	}
	if in.ChatType == channels.ChatGroup && !in.Mentioned {
		return channels.Receipt{}, nil
	}
	key := in.Account + "/" + in.MsgID
	if s.seen[key] {
		return channels.Receipt{Answer: true}, nil
	}
	s.seen[key] = true
	s.accepted = append(s.accepted, in)
	return channels.Receipt{New: true, Answer: true}, nil
}

func (s *memSink) Progress(_ context.Context, ref channels.MessageRef) (channels.Progress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.polls++
	if s.progress == nil {
		return channels.Progress{Known: true}, nil
	}
	return s.progress(s.polls), nil
}

func (s *memSink) Shown(_ context.Context, ref channels.MessageRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shown = append(s.shown, ref)
	s.notify()
	return nil
}

func (s *memSink) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// snapshot returns accepted messages, Accept calls and Shown refs.
func (s *memSink) snapshot() ([]channels.Inbound, int, []channels.MessageRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]channels.Inbound(nil), s.accepted...), s.calls, append([]channels.MessageRef(nil), s.shown...)
}

// waitFor waits until cond holds or ctx ends.
func (s *memSink) waitFor(ctx context.Context, t testing.TB, cond func() bool) {
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
			t.Fatal("condition not met in time")
		case <-wake:
		}
	}
}

// Refused records account/check, as the gateway counts them.
func (s *memSink) Refused(_ context.Context, _, account, check string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, account+"/"+check)
}
