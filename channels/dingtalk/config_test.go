package dingtalk

import (
	"context"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
)

func build(t *testing.T, src string) (channels.Channel, error) {
	t.Helper()
	decode := func(v any) error {
		dec := yaml.NewDecoder(strings.NewReader(src))
		dec.KnownFields(true)
		return dec.Decode(v)
	}
	env := channels.Env{TokenCache: func(string) (channels.TokenCache, error) { return chantest.NewTokenCache(), nil }, Now: time.Now}
	return Platform.New(context.Background(), decode, env)
}

func TestConfig_ErrorsNameKeys(t *testing.T) {
	_, err := build(t, `
robots:
  - name: HR
    mode: websocket
    app_key: k
    api_base_url: ftp://x
  - name: ok
    app_key: k
    app_secret: s
    corp_id: c
  - name: ok
    app_key: k
    app_secret: s
    corp_id: c
    keepalive: 1s
    ping_wait: 2s
`)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"dingtalk.robots[0].name: required",
		"dingtalk.robots[0].mode: must be http or stream",
		"dingtalk.robots[0].app_secret: required",
		"dingtalk.robots[0].corp_id: required",
		"dingtalk.robots[0].api_base_url: must be an http(s) URL",
		"dingtalk.robots[2].name: duplicate name",
		"dingtalk.robots[2].ping_wait: must be shorter than keepalive",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// The shared base URL rule: a query would go out with every call.
	if _, err := build(t, "robots:\n  - {name: a, app_key: k, app_secret: s, corp_id: c, oapi_base_url: 'https://oapi.dingtalk.com?x=1'}\n"); err == nil ||
		!strings.Contains(err.Error(), "dingtalk.robots[0].oapi_base_url: must be") {
		t.Errorf("base URL with a query: %v", err)
	}
	if _, err := build(t, "robots: []\n"); err == nil || !strings.Contains(err.Error(), "dingtalk.robots: required") {
		t.Errorf("empty robots: %v", err)
	}
	if _, err := build(t, "robots:\n  - name: a\n    secret: x\n"); err == nil {
		t.Error("unknown key accepted")
	}
}

func TestConfig_Defaults(t *testing.T) {
	ch, err := build(t, `
robots:
  - name: hr-bot
    app_key: dingkey
    app_secret: s
    corp_id: c
  - name: it-bot
    mode: stream
    app_key: dingkey2
    app_secret: s2
    corp_id: c2
    card_template_id: tpl.schema
`)
	if err != nil {
		t.Fatal(err)
	}
	c := ch.(*Channel)
	r := c.robots["hr-bot"]
	if r.cfg.Mode != ModeHTTP || r.cfg.RobotCode != "dingkey" || r.cfg.APIBaseURL != DefaultAPIBaseURL || r.cfg.OAPIBaseURL != DefaultOAPIBaseURL ||
		r.window != time.Hour || r.cfg.StreamDeadline != DefaultStreamDeadline || r.cfg.CardInterval != DefaultCardInterval || r.cfg.CardContentKey != "content" {
		t.Errorf("defaults: %+v window %s", r.cfg, r.window)
	}
	if l := c.Limits("hr-bot"); l.Streams || l.MaxBytes != MaxMarkdownBytes || l.PerMinute != GroupMessagesPerMinute || l.Format != channels.FormatMarkdown {
		t.Errorf("hr-bot limits %+v", l)
	}
	if !c.Limits("it-bot").Streams {
		t.Error("it-bot has a card template but does not stream")
	}
	if routes := c.Routes(nil); len(routes) != 1 || routes[0].Path != "/dingtalk/hr-bot/callback" {
		t.Errorf("routes %+v", routes)
	}
	if conns := c.Connections(); len(conns) != 1 || conns[0].Account != "it-bot" || conns[0].Exclusive {
		t.Errorf("connections %+v", conns)
	}
}
