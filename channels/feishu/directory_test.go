package feishu_test

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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
	var logs syncBuffer
	ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if _, err := ch.Departments(withTimeout(t, 10*time.Second), testAccount, testUserID); err == nil {
		t.Fatal("lookup without the scope succeeded")
	}
	if !strings.Contains(logs.String(), "contact:contact.base:readonly") {
		t.Fatalf("log does not name the scope to grant:\n%s", logs.String())
	}
}
