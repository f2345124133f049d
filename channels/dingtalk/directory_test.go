package dingtalk

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

func TestDepartments(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, nil)
	ch := &Channel{robots: map[string]*robot{"hr-bot": r}}
	ctx := withTimeout(t, 10*time.Second)
	fake.SetDepartments("zhangsan", 1, 42)

	for range 2 {
		got, err := ch.Departments(ctx, "hr-bot", "zhangsan")
		if err != nil || strings.Join(got, ",") != "1,42" {
			t.Fatalf("departments %v, %v", got, err)
		}
	}
	if n := fake.UserGets(); n != 1 {
		t.Errorf("user/get called %d times, want 1 (cached)", n)
	}
	c.Add(DefaultDepartmentsTTL)
	fake.ExpireTokens() // the legacy API refreshes an expired token too
	if _, err := ch.Departments(ctx, "hr-bot", "zhangsan"); err != nil {
		t.Fatal(err)
	}
	if n, tok := fake.UserGets(), fake.TokenRequests(); n != 3 || tok != 2 {
		t.Errorf("user/get %d (want 3: expired token, then again), tokens %d (want 2)", n, tok)
	}
}

func TestDepartments_MissingPermissionIsLogged(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, nil)
	var logs bytes.Buffer
	r.log = slog.New(slog.NewTextHandler(&logs, nil))
	r.api.log = r.log
	fake.DenyMemberPermission()
	if _, err := r.departments(withTimeout(t, 10*time.Second), "zhangsan"); err == nil {
		t.Fatal("no error")
	}
	if !strings.Contains(logs.String(), "qyapi_get_member") || !strings.Contains(logs.String(), "权限管理") {
		t.Errorf("log does not name the permission to grant: %s", logs.String())
	}
	if strings.Contains(logs.String(), testAppSecret) {
		t.Error("the app secret reached the log")
	}
}
