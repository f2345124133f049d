package dingtalk

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// The doctor fetches a token and opens a stream endpoint; a wrong secret
// names the keys to fix.
func TestDoctorChecksTokenAndStream(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	ctx := withTimeout(t, 10*time.Second)
	ok := &Channel{robots: map[string]*robot{"hr-bot": testRobot(t, fake, newClock(), nil, func(s *RobotSection) { s.Mode = ModeStream })}}
	checks := ok.Check(ctx)
	if len(checks) != 3 || !checks[0].OK || !checks[1].OK || !checks[2].OK { // the third: button cards off
		t.Fatalf("good setup: %+v", checks)
	}
	bad := &Channel{robots: map[string]*robot{"hr-bot": testRobot(t, fake, newClock(), nil, func(s *RobotSection) {
		s.Mode, s.AppSecret = ModeStream, "wrong-secret"
	})}}
	checks = bad.Check(ctx)
	if len(checks) != 2 || checks[0].OK || checks[1].OK {
		t.Fatalf("wrong secret: %+v", checks)
	}
	for _, ck := range checks {
		if !strings.Contains(ck.Fix, "app_secret") || strings.Contains(ck.Detail+ck.Fix, "wrong-secret") {
			t.Fatalf("fix should name app_secret and hide the secret: %+v", ck)
		}
	}
}

// A self-test sends a text to the user; a missing permission is named.
func TestSelfTestExplainsMissingPermission(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	ctx := withTimeout(t, 10*time.Second)
	ch := &Channel{robots: map[string]*robot{"hr-bot": testRobot(t, fake, newClock(), nil, nil)}}
	res, err := ch.SelfTest(ctx, "hr-bot", "zhangsan")
	if err != nil || !res.OK {
		t.Fatalf("self-test: %+v %v", res, err)
	}
	if sent := fake.Sent(); len(sent) != 1 || sent[0].Users[0] != "zhangsan" || sent[0].MsgKey != "sampleText" {
		t.Fatalf("sent %+v", sent)
	}
	fake.Fail("/v1.0/robot/oToMessages/batchSend", 1, 403, "Forbidden.AccessDenied.AccessTokenPermissionDenied")
	res, err = ch.SelfTest(ctx, "hr-bot", "zhangsan")
	if err != nil || res.OK || !strings.Contains(res.Explanation, "qyapi_robot_sendmsg") {
		t.Fatalf("missing permission: %+v %v", res, err)
	}
}
