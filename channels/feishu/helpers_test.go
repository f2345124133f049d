package feishu_test

import (
	"bytes"
	"context"
	"log/slog"
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
