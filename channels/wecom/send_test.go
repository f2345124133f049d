package wecom_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
	"github.com/silenceper/wechat/v2/cache"
)

const testAgentID = "1000002"

var sendNow = time.Unix(1700000000, 0)

// corpSeq gives each test its own corp id: the API base registry is
// process-wide and keyed by corp id.
var corpSeq atomic.Int64

type sendFixture struct {
	app    *wecom.App
	ch     *wecom.Channel
	srv    *wecomtest.Server
	secret string
	logs   *bytes.Buffer
}

type fixtureOpts struct {
	name        string
	wrongSecret bool
	baseURL     string // instead of the fake's
}

func newSendFixture(t testing.TB, o fixtureOpts) *sendFixture {
	t.Helper()
	corpID := fmt.Sprintf("wwsend%d", corpSeq.Add(1))
	secret := "S3cret-" + corpID + "-abcdefgh"
	srv := wecomtest.NewServer(t, corpID, secret)
	if o.wrongSecret {
		secret = "Wr0ng-" + corpID + "-abcdefgh"
	}
	base := srv.URL()
	if o.baseURL != "" {
		base = o.baseURL
	}
	if o.name == "" {
		o.name = "app-hr"
	}
	logs := &bytes.Buffer{}
	app, err := wecom.NewApp(wecom.AppConfig{
		Name: o.name, CorpID: corpID, AgentID: testAgentID, Secret: secret,
		Token: wecomtest.VectorToken, EncodingAESKey: wecomtest.VectorKey, APIBaseURL: base,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}, cache.NewMemory(), func() time.Time { return sendNow })
	if err != nil {
		t.Fatal(err)
	}
	return &sendFixture{app: app, ch: wecom.NewChannel(app), srv: srv, secret: secret, logs: logs}
}

func (f *sendFixture) send(t *testing.T, to, text string) (channels.SendResult, error) {
	t.Helper()
	return f.ch.Send(context.Background(), channels.Outbound{
		Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo(to), Text: text,
	})
}

func TestChannel_Basics(t *testing.T) {
	var c channels.Channel = wecom.NewChannel()
	if c.Name() != "wecom" || c.Limits("").MaxBytes != 2048 {
		t.Fatalf("Name %q MaxBytes %d", c.Name(), c.Limits("").MaxBytes)
	}
}

func TestChannel_Send_Delivers(t *testing.T) {
	f := newSendFixture(t, fixtureOpts{})
	res, err := f.send(t, "zhangsan", "你好")
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages delivered, want 1", len(msgs))
	}
	m := msgs[0]
	if m.ToUser != "zhangsan" || m.AgentID != testAgentID || m.MsgType != "text" || m.Content != "你好" {
		t.Fatalf("delivered %+v", m)
	}
	if m.EnableDuplicateCheck != 0 || m.DuplicateCheckInterval != 0 {
		t.Fatalf("first attempt asked for duplicate check: %+v", m)
	}
	if res.MessageID == "" || res.MessageID != m.MsgID {
		t.Fatalf("MessageID %q, want %q", res.MessageID, m.MsgID)
	}

	// The cached token is reused.
	if _, err := f.send(t, "lisi", "second"); err != nil {
		t.Fatal(err)
	}
	if n := f.srv.TokenRequests(); n != 1 {
		t.Fatalf("%d token requests, want 1", n)
	}
	if msgs := f.srv.Messages(); len(msgs) != 2 || msgs[1].ToUser != "lisi" {
		t.Fatalf("delivered %+v", msgs)
	}
}

func TestChannel_Send_RefreshesInvalidatedToken(t *testing.T) {
	f := newSendFixture(t, fixtureOpts{})
	if _, err := f.send(t, "zhangsan", "first"); err != nil {
		t.Fatal(err)
	}
	f.srv.InvalidateTokens()
	if _, err := f.send(t, "zhangsan", "second"); err != nil {
		t.Fatalf("send after invalidation: %v", err)
	}
	if n := f.srv.TokenRequests(); n != 2 {
		t.Fatalf("%d token requests, want 2", n)
	}
	var seconds int
	for _, m := range f.srv.Messages() {
		if m.Content == "second" {
			seconds++
		}
	}
	if seconds != 1 || len(f.srv.Messages()) != 2 {
		t.Fatalf("second delivered %d times, %d messages in all; want 1 and 2", seconds, len(f.srv.Messages()))
	}
}

func TestChannel_Send_RefreshesOnlyOnce(t *testing.T) {
	f := newSendFixture(t, fixtureOpts{})
	f.srv.FailNextSends(42001, 2)
	_, err := f.send(t, "zhangsan", "hi")
	var apiErr *wxbiz.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 42001 {
		t.Fatalf("err = %v, want errcode 42001", err)
	}
	if errors.Is(err, channels.ErrPermanent) {
		t.Fatal("an expired token is not a permanent failure")
	}
	if n := f.srv.TokenRequests(); n != 2 {
		t.Fatalf("%d token requests, want 2 (one refresh)", n)
	}
	if n := len(f.srv.Requests()); n != 0 {
		t.Fatalf("%d sends accepted, want 0", n)
	}
	if _, err := f.send(t, "zhangsan", "hi"); err != nil {
		t.Fatalf("next send: %v", err)
	}
}

func TestChannel_Send_UntrustedIP(t *testing.T) {
	f := newSendFixture(t, fixtureOpts{})
	f.srv.FailNextSends(60020, 1)
	_, err := f.send(t, "zhangsan", "hi")
	if err == nil || !strings.Contains(err.Error(), "server IP not in the app's trusted IP list (WeCom errcode 60020)") {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, channels.ErrPermanent) {
		t.Fatalf("err does not wrap ErrPermanent: %v", err)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "errcode=60020") ||
		!strings.Contains(logs, "trusted IP list") {
		t.Fatalf("log = %q", logs)
	}
	if strings.Contains(logs, f.secret) || strings.Contains(err.Error(), f.secret) {
		t.Fatal("secret leaked")
	}
	if len(f.srv.Messages()) != 0 {
		t.Fatal("a refused message was delivered")
	}
}

func TestChannel_Send_ErrcodeClasses(t *testing.T) {
	for _, tt := range []struct {
		code      int
		permanent bool
	}{
		{81013, true},
		{60011, true},
		{40003, true},
		{48002, true},
		{45009, false},
		{-1, false},
		{99999, false}, // unknown: transient, so nothing is dropped on a code we do not know
	} {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			f := newSendFixture(t, fixtureOpts{})
			f.srv.FailNextSends(tt.code, 1)
			_, err := f.send(t, "zhangsan", "hi")
			var apiErr *wxbiz.APIError
			if !errors.As(err, &apiErr) || apiErr.Code != int64(tt.code) || apiErr.Op != "message/send" {
				t.Fatalf("err = %v, want errcode %d", err, tt.code)
			}
			if got := errors.Is(err, channels.ErrPermanent); got != tt.permanent {
				t.Fatalf("permanent = %v, want %v (%v)", got, tt.permanent, err)
			}
			if _, err := f.send(t, "zhangsan", "hi"); err != nil {
				t.Fatalf("next send: %v", err)
			}
		})
	}
}

func TestChannel_Send_WrongSecret(t *testing.T) {
	f := newSendFixture(t, fixtureOpts{wrongSecret: true})
	_, err := f.send(t, "zhangsan", "hi")
	var apiErr *wxbiz.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 40001 || apiErr.Op != "gettoken" {
		t.Fatalf("err = %v, want gettoken errcode 40001", err)
	}
	if !errors.Is(err, channels.ErrPermanent) {
		t.Fatalf("bad secret is permanent: %v", err)
	}
	if strings.Contains(err.Error(), f.secret) || strings.Contains(f.logs.String(), f.secret) {
		t.Fatalf("secret leaked: %v", err)
	}
}

// silenceper's transport errors embed the full URL, corpsecret included.
func TestChannel_Send_RedactsSecretFromTransportError(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close() // connections to it are refused
	f := newSendFixture(t, fixtureOpts{baseURL: dead.URL})
	_, err := f.send(t, "zhangsan", "hi")
	if err == nil {
		t.Fatal("send to a closed server succeeded")
	}
	if strings.Contains(err.Error(), f.secret) {
		t.Fatalf("secret leaked: %v", err)
	}
	if !strings.Contains(err.Error(), "corpsecret=REDACTED") {
		t.Fatalf("err = %v, want the URL with corpsecret redacted", err)
	}
	if errors.Is(err, channels.ErrPermanent) {
		t.Fatal("a connection failure is transient")
	}
}

// A non-200 answer to message/send embeds the URL with access_token.
func TestChannel_Send_RedactsTokenFromHTTPError(t *testing.T) {
	const token = "tok-very-secret-123456"
	mux := http.NewServeMux()
	mux.HandleFunc("/cgi-bin/gettoken", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"errcode":0,"errmsg":"ok","access_token":%q,"expires_in":7200}`, token)
	})
	mux.HandleFunc("/cgi-bin/message/send", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f := newSendFixture(t, fixtureOpts{baseURL: srv.URL})
	_, err := f.send(t, "zhangsan", "hi")
	if err == nil || !strings.Contains(err.Error(), "502") {
		t.Fatalf("err = %v, want the 502", err)
	}
	if strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "access_token=REDACTED") {
		t.Fatalf("token not redacted: %v", err)
	}
}

func TestChannel_Send_InvalidUserWithErrcode0(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/cgi-bin/gettoken", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"errcode":0,"errmsg":"ok","access_token":"tok-invaliduser-test","expires_in":7200}`)
	})
	mux.HandleFunc("/cgi-bin/message/send", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"errcode":0,"errmsg":"ok","invaliduser":"zhangsan","msgid":"m1"}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f := newSendFixture(t, fixtureOpts{baseURL: srv.URL})
	if _, err := f.send(t, "ZhangSan", "hi"); !errors.Is(err, channels.ErrPermanent) {
		t.Fatalf("err = %v, want ErrPermanent", err)
	}
}

func TestChannel_Send_DuplicateCheck(t *testing.T) {
	t.Run("RetryAsksForDuplicateCheck", func(t *testing.T) {
		f := newSendFixture(t, fixtureOpts{})
		_, err := f.ch.Send(context.Background(), channels.Outbound{
			Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo("zhangsan"), Text: "hi",
			Attempt: 1, FirstAttemptUnix: sendNow.Unix() - 120,
		})
		if err != nil {
			t.Fatal(err)
		}
		m := f.srv.Messages()[0]
		if m.EnableDuplicateCheck != 1 || m.DuplicateCheckInterval != 180 {
			t.Fatalf("enable_duplicate_check=%d duplicate_check_interval=%d, want 1 and 180",
				m.EnableDuplicateCheck, m.DuplicateCheckInterval)
		}
	})
	t.Run("IntervalClamped", func(t *testing.T) {
		for first, want := range map[int64]int{
			sendNow.Unix() - 10*3600: 14400, // beyond WeCom's 4 h maximum
			0:                        14400, // unknown first attempt
			sendNow.Unix() + 30:      60,    // clock skew: still covers a minute
		} {
			f := newSendFixture(t, fixtureOpts{})
			_, err := f.ch.Send(context.Background(), channels.Outbound{
				Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo("u"), Text: "hi",
				Attempt: 3, FirstAttemptUnix: first,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := f.srv.Messages()[0].DuplicateCheckInterval; got != want {
				t.Fatalf("first attempt %d: interval %d, want %d", first, got, want)
			}
		}
	})
	t.Run("RetryAfterCrashDeliversOnce", func(t *testing.T) {
		f := newSendFixture(t, fixtureOpts{})
		out := channels.Outbound{
			Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo("zhangsan"), Text: "the answer",
			FirstAttemptUnix: sendNow.Unix(),
		}
		first, err := f.ch.Send(context.Background(), out) // reached WeCom; say its answer was lost
		if err != nil {
			t.Fatal(err)
		}
		out.Attempt = 1
		second, err := f.ch.Send(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(f.srv.Messages()); n != 1 {
			t.Fatalf("%d deliveries, want 1", n)
		}
		reqs := f.srv.Requests()
		if len(reqs) != 2 || !reqs[1].Duplicate {
			t.Fatalf("requests %+v, want the retry suppressed", reqs)
		}
		if second.MessageID != first.MessageID {
			t.Fatalf("retry MessageID %q, want the original %q", second.MessageID, first.MessageID)
		}
	})
}

func TestChannel_Send_Refusals(t *testing.T) {
	f := newSendFixture(t, fixtureOpts{})
	exact := strings.Repeat("中", 682) + "ab" // 2048 bytes
	if len(exact) != wecom.MaxTextBytes {
		t.Fatalf("fixture is %d bytes", len(exact))
	}
	for name, out := range map[string]channels.Outbound{
		"TooLong":        {Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo("u"), Text: exact + "c"},
		"UnknownAccount": {Account: "nope", ReplyTo: wecomtest.AppReplyTo("u"), Text: "hi"},
		"NoRecipient":    {Account: f.app.Name(), Text: "hi"},
		"EmptyText":      {Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo("u"), Text: " \n"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := f.ch.Send(context.Background(), out); !errors.Is(err, channels.ErrPermanent) {
				t.Fatalf("err = %v, want ErrPermanent", err)
			}
		})
	}
	if n := f.srv.TokenRequests(); n != 0 {
		t.Fatalf("refused sends contacted WeCom (%d token requests)", n)
	}
	if _, err := f.send(t, "u", exact); err != nil {
		t.Fatalf("exactly MaxTextBytes: %v", err)
	}
	if m := f.srv.Messages()[0]; m.Truncated || m.Content != exact {
		t.Fatal("the 2048-byte text was not delivered whole")
	}
}

func TestChannel_Send_RoutesAppsToTheirAPIBase(t *testing.T) {
	hr := newSendFixture(t, fixtureOpts{name: "app-hr"})
	it := newSendFixture(t, fixtureOpts{name: "app-it"})
	ch := wecom.NewChannel(hr.app, it.app)
	for _, tt := range []struct{ account, to string }{{"app-hr", "alice"}, {"app-it", "bob"}, {"app-hr", "carol"}} {
		_, err := ch.Send(context.Background(), channels.Outbound{
			Account: tt.account, ReplyTo: wecomtest.AppReplyTo(tt.to), Text: "hi " + tt.to,
		})
		if err != nil {
			t.Fatalf("%s: %v", tt.account, err)
		}
	}
	if got := recipients(hr.srv.Messages()); got != "alice,carol" {
		t.Fatalf("hr server got %q", got)
	}
	if got := recipients(it.srv.Messages()); got != "bob" {
		t.Fatalf("it server got %q", got)
	}
	if hr.srv.TokenRequests() != 1 || it.srv.TokenRequests() != 1 {
		t.Fatalf("token requests hr=%d it=%d, want 1 each", hr.srv.TokenRequests(), it.srv.TokenRequests())
	}
}

func recipients(msgs []wecomtest.SentMessage) string {
	var to []string
	for _, m := range msgs {
		to = append(to, m.ToUser)
	}
	return strings.Join(to, ",")
}

func TestChannel_Send_Context(t *testing.T) {
	t.Run("AlreadyDone", func(t *testing.T) {
		f := newSendFixture(t, fixtureOpts{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := f.ch.Send(ctx, channels.Outbound{Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo("u"), Text: "hi"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if f.srv.TokenRequests() != 0 {
			t.Fatal("a cancelled send contacted WeCom")
		}
	})
	t.Run("CancelledInFlight", func(t *testing.T) {
		arrived := make(chan struct{})
		release := make(chan struct{})
		mux := http.NewServeMux()
		mux.HandleFunc("/cgi-bin/gettoken", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"errcode":0,"errmsg":"ok","access_token":"tok-inflight-test","expires_in":7200}`)
		})
		mux.HandleFunc("/cgi-bin/message/send", func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-release
			fmt.Fprint(w, `{"errcode":0,"errmsg":"ok","msgid":"m1"}`)
		})
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) }) // runs before srv.Close
		f := newSendFixture(t, fixtureOpts{baseURL: srv.URL})

		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-arrived
			cancel()
		}()
		_, err := f.ch.Send(ctx, channels.Outbound{Account: f.app.Name(), ReplyTo: wecomtest.AppReplyTo("u"), Text: "hi"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

// The request body is what WeCom documents: agentid an integer, and no
// duplicate-check fields on a first attempt.
func TestChannel_Send_WireFormat(t *testing.T) {
	bodies := make(chan map[string]any, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/cgi-bin/gettoken", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"errcode":0,"errmsg":"ok","access_token":"tok-wire-format","expires_in":7200}`)
	})
	mux.HandleFunc("/cgi-bin/message/send", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		bodies <- m
		fmt.Fprint(w, `{"errcode":0,"errmsg":"ok","msgid":"m1"}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f := newSendFixture(t, fixtureOpts{baseURL: srv.URL})
	if _, err := f.send(t, "zhangsan", "hi"); err != nil {
		t.Fatal(err)
	}
	got := <-bodies
	want := map[string]any{"touser": "zhangsan", "msgtype": "text", "agentid": float64(1000002), "text": map[string]any{"content": "hi"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("body %v, want %v", got, want)
	}
}
