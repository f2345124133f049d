package dingtalk

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// countingServer records every connection and request it gets.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h != nil {
			h(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"errcode":0}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestSend_WebhookOffTheAPIHostsIsNotPosted: a session webhook on a host
// other than the configured API's (stored before trustedWebhook, or
// reached by a redirect from the API host) gets no request; the reply goes
// through the OpenAPI instead, and the refusal is counted.
func TestSend_WebhookOffTheAPIHostsIsNotPosted(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, nil)
	var refused atomic.Int32
	r.env.FetchRefused = func(channel, account string) {
		if channel == ChannelName && account == "hr-bot" {
			refused.Add(1)
		}
	}
	r.webhook = webhookClient(r.cfg, r.env, r.log)
	inside, conns := countingServer(t, nil)
	elsewhere := strings.Replace(inside.URL, "127.0.0.1", "localhost", 1) + "/robot/sendBySession?session=s1"
	// On the API's host (127.0.0.1 here), redirecting off it.
	bouncer, _ := countingServer(t, func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, elsewhere, http.StatusTemporaryRedirect)
	})
	ctx := withTimeout(t, 10*time.Second)
	live := c.Now().Add(time.Hour).UnixMilli()
	for i, hook := range []string{elsewhere, bouncer.URL + "/robot/sendBySession?session=s1"} {
		before := len(fake.Sent())
		rt := addr(t, replyTo{Conversation: "c1", User: "zhangsan", Webhook: hook, WebhookExpires: live})
		if _, err := r.send(ctx, channels.Outbound{Account: "hr-bot", ReplyTo: rt, Format: channels.FormatMarkdown, Text: "答复", Parts: 1}); err != nil {
			t.Fatalf("%s: %v", hook, err)
		}
		if sent := fake.Sent(); len(sent) != before+1 || sent[before].Via != "openapi" {
			t.Errorf("%s: sent %+v, want the reply through the OpenAPI", hook, sent[before:])
		}
		if n := refused.Load(); n != int32(i+1) {
			t.Errorf("%s: %d refusals counted, want %d", hook, n, i+1)
		}
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the webhook off the API hosts got %d connections", n)
	}
}
