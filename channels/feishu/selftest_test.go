package feishu_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

// The doctor fetches a token, reads the bot info, asks for a
// long-connection endpoint and says what cards need; a wrong secret names
// the key and hides it.
func TestDoctorChecksTokenBotAndEndpoint(t *testing.T) {
	fake := feishutest.NewServer(t, testAppID, testSecret)
	ctx := withTimeout(t, 10*time.Second)
	ch := newChannel(t, appYAML(fake.URL(), "websocket", ""), channels.Env{})
	checks := ch.Check(ctx)
	if len(checks) != 4 || !checks[0].OK || !checks[1].OK || !checks[2].OK || !strings.Contains(checks[3].Detail, "card.action.trigger") {
		t.Fatalf("good setup: %+v", checks)
	}
	bad := newChannel(t, strings.Replace(appYAML(fake.URL(), "websocket", ""), testSecret, "wrong-secret-xyz", 1), channels.Env{})
	checks = bad.Check(ctx)
	if len(checks) != 1 || checks[0].OK || !strings.Contains(checks[0].Fix, "app_secret") ||
		strings.Contains(checks[0].Detail+checks[0].Fix, "wrong-secret-xyz") {
		t.Fatalf("wrong secret: %+v", checks)
	}
}

// A self-test sends a text by the app's id type; a missing scope is named.
func TestSelfTestNamesTheMissingScope(t *testing.T) {
	fake := feishutest.NewServer(t, testAppID, testSecret)
	ctx := withTimeout(t, 10*time.Second)
	ch := newChannel(t, appYAML(fake.URL(), "http", ""), channels.Env{})
	res, err := ch.SelfTest(ctx, testAccount, testUserID)
	if err != nil || !res.OK {
		t.Fatalf("self-test: %+v %v", res, err)
	}
	if d := fake.Delivered(); len(d) != 1 || d[0].ReceiveIDType != "user_id" || d[0].ReceiveID != testUserID {
		t.Fatalf("delivered %+v", d)
	}
	fake.FailMessages(feishutest.CodeNoScope)
	res, err = ch.SelfTest(ctx, testAccount, testUserID)
	if err != nil || res.OK || !strings.Contains(res.Explanation, "im:message:send_as_bot") {
		t.Fatalf("missing scope: %+v %v", res, err)
	}
	fake.FailMessages(230013)
	if res, _ = ch.SelfTest(ctx, testAccount, testUserID); !strings.Contains(res.Explanation, "availability range") {
		t.Fatalf("outside range: %+v", res)
	}
}
