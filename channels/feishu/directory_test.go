package feishu_test

import (
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

func TestDepartmentsCached(t *testing.T) {
	api := feishutest.NewServer(t, testAppID, testSecret)
	api.SetDepartments(testUserID, "od-hr", "od-it")
	ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{})
	ctx := withTimeout(t, 10*time.Second)
	for range 3 {
		got, err := ch.Departments(ctx, testAccount, testUserID)
		if err != nil || !reflect.DeepEqual(got, []string{"od-hr", "od-it"}) {
			t.Fatalf("got %v, %v", got, err)
		}
	}
	if n := api.UserGets(); n != 1 {
		t.Fatalf("%d lookups, want 1 (cached)", n)
	}
}

func TestDepartmentsMissingScopeLogged(t *testing.T) {
	api := feishutest.NewServer(t, testAppID, testSecret)
	api.DenyContact(true)
	var logs chantest.LogBuffer
	ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if _, err := ch.Departments(withTimeout(t, 10*time.Second), testAccount, testUserID); err == nil {
		t.Fatal("lookup without the scope succeeded")
	}
	if !strings.Contains(logs.String(), "contact:contact.base:readonly") {
		t.Fatalf("log does not name the scope to grant:\n%s", logs.String())
	}
}
