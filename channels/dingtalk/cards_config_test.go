package dingtalk

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// A button template id that is not one is refused at start, naming the
// key; a good one turns cards on in Stream mode only.
func TestConfig_ButtonCardTemplate(t *testing.T) {
	for _, bad := range []string{"not a template", "tpl", "../x.schema", strings.Repeat("a", 121) + ".schema"} {
		_, err := build(t, "robots:\n  - {name: a, mode: stream, app_key: k, app_secret: s, corp_id: c, button_card_template_id: '"+bad+"'}\n")
		if err == nil || !strings.Contains(err.Error(), "dingtalk.robots[0].button_card_template_id: must be a card template id") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	ch, err := build(t, `
robots:
  - {name: s, mode: stream, app_key: k, app_secret: s, corp_id: c, button_card_template_id: db56f2c2-f609-4878-9a34-46f6a0194a73.schema}
  - {name: h, mode: http, app_key: k2, app_secret: s2, corp_id: c, button_card_template_id: db56f2c2-f609-4878-9a34-46f6a0194a73.schema}
  - {name: n, mode: stream, app_key: k3, app_secret: s3, corp_id: c}
`)
	if err != nil {
		t.Fatal(err)
	}
	c := ch.(*Channel)
	if c.CardButtons("s") != MaxCardButtons || c.CardButtons("h") != MaxCardButtons || c.CardButtons("n") != 0 || c.CardButtons("x") != 0 {
		t.Errorf("buttons s=%d h=%d n=%d", c.CardButtons("s"), c.CardButtons("h"), c.CardButtons("n"))
	}
	if got := c.ClickRef("s", []byte(`{"group":true,"conversation":"cid","user":"zhangsan"}`)); got != "zhangsan" {
		t.Errorf("click ref %q", got)
	}
	if got := c.ClickRef("s", []byte(`not json`)); got != "" {
		t.Errorf("click ref of a bad address %q", got)
	}
}

// The doctor names what button cards lack: the template id (off), the
// permission Card.Instance.Write; an HTTP robot has them too.
func TestDoctorButtonCards(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	ctx := withTimeout(t, 10*time.Second)
	check := func(edit func(*RobotSection)) (ok bool, detail, fix string) {
		ch := &Channel{robots: map[string]*robot{"hr-bot": testRobot(t, fake, newClock(), nil, edit)}}
		for _, ck := range ch.Check(ctx) {
			if strings.HasSuffix(ck.Name, ": button cards") {
				return ck.OK, ck.Detail, ck.Fix
			}
		}
		t.Fatal("no button cards check")
		return
	}
	if ok, detail, _ := check(nil); !ok || !strings.Contains(detail, "button_card_template_id") {
		t.Errorf("no template: %v %q", ok, detail)
	}
	tpl := "hermes-confirm.schema"
	// An HTTP robot's taps come over a stream connection of its own.
	if ok, detail, _ := check(func(s *RobotSection) { s.ButtonCardTemplateID = tpl }); !ok || !strings.Contains(detail, cardTopic) {
		t.Errorf("http mode: %v %q", ok, detail)
	}
	stream := func(s *RobotSection) { s.Mode, s.ButtonCardTemplateID = ModeStream, tpl }
	if ok, detail, _ := check(stream); !ok || !strings.Contains(detail, cardTopic) {
		t.Errorf("stream mode: %v %q", ok, detail)
	}
	fake.Fail("/v1.0/card/instances", 1, http.StatusForbidden, "Forbidden.AccessDenied.AccessTokenPermissionDenied")
	if ok, _, fix := check(stream); ok || !strings.Contains(fix, "Card.Instance.Write") {
		t.Errorf("no permission: %v %q", ok, fix)
	}
}
