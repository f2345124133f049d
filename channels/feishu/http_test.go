package feishu_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

// eventRig is one app in http mode behind an HTTP server, with a fake
// OpenAPI and an in-memory sink.
type eventRig struct {
	api    *feishutest.Server
	sink   *chantest.Sink
	ch     *feishu.Channel
	url    string
	crypto *feishu.Crypto
}

func newEventRig(t *testing.T, extra string) *eventRig {
	t.Helper()
	return newEventRigSection(t, func(base string) string { return appYAML(base, feishu.ModeHTTP, extra) }, channels.Env{})
}

// newEventRigSection is newEventRig with the whole `feishu:` section (given
// the fake's URL) and env.
func newEventRigSection(t *testing.T, section func(base string) string, env channels.Env) *eventRig {
	t.Helper()
	r := &eventRig{api: feishutest.NewServer(t, testAppID, testSecret), sink: chantest.NewSink(), crypto: feishu.NewCrypto(testEncrypt)}
	r.ch = newChannel(t, section(r.api.URL()), env)
	mux := http.NewServeMux()
	for _, route := range r.ch.Routes(r.sink) {
		mux.HandleFunc(route.Method+" "+route.Path, route.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/feishu/" + testAccount + "/events"
	return r
}

// post sends an encrypted, signed event as Feishu would.
func (r *eventRig) post(t *testing.T, plain []byte) (int, string) {
	t.Helper()
	h, body := feishutest.EncryptedRequest(r.crypto, plain, time.Now())
	status, resp, err := feishutest.Post(http.DefaultClient, r.url, h, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, resp
}

func message(id, chatType, text string, mentions ...feishutest.Mention) feishutest.Message {
	chat := testChatP2P
	if chatType == "group" {
		chat = testChatGroup
	}
	return feishutest.Message{
		MessageID: id, ChatID: chat, ChatType: chatType, OpenID: testUserOpen, UserID: testUserID,
		TenantKey: testTenant, AppID: testAppID, Token: testToken, Text: text, Mentions: mentions,
	}
}

func TestURLVerification(t *testing.T) {
	r := newEventRig(t, "")
	t.Run("Plain", func(t *testing.T) {
		status, body, err := feishutest.Post(http.DefaultClient, r.url, http.Header{}, feishutest.URLVerificationJSON("ch-1", testToken))
		if err != nil || status != 200 || body != `{"challenge":"ch-1"}` {
			t.Fatalf("got %d %s %v", status, body, err)
		}
	})
	t.Run("Encrypted", func(t *testing.T) {
		enc, _ := r.crypto.Encrypt(feishutest.URLVerificationJSON("ch-2", testToken))
		body, _ := json.Marshal(map[string]string{"encrypt": enc})
		// No signature headers: Feishu checks the URL before it signs.
		status, resp, err := feishutest.Post(http.DefaultClient, r.url, http.Header{}, body)
		if err != nil || status != 200 || resp != `{"challenge":"ch-2"}` {
			t.Fatalf("got %d %s %v", status, resp, err)
		}
	})
	t.Run("ErrToken", func(t *testing.T) {
		status, _, _ := feishutest.Post(http.DefaultClient, r.url, http.Header{}, feishutest.URLVerificationJSON("ch-3", "forged"))
		if status != http.StatusUnauthorized {
			t.Fatalf("got %d, want 401", status)
		}
	})
}

func TestP2PMessageAccepted(t *testing.T) {
	r := newEventRig(t, "")
	status, _ := r.post(t, feishutest.EventJSON(message("om_1", "p2p", "我还有几天年假？")))
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	acc := r.sink.Answered()
	if len(acc) != 1 {
		t.Fatalf("accepted %d", len(acc))
	}
	in := acc[0]
	want := channels.Identity{UserID: testUserID, CorpID: testTenant}
	if in.Sender.UserID != want.UserID || in.Sender.CorpID != want.CorpID || in.MsgID != "om_1" ||
		in.ChatType != channels.ChatSingle || in.ChatID != testChatP2P || in.Text != "我还有几天年假？" || in.MsgType != channels.TypeText {
		t.Fatalf("got %+v", in)
	}
	var rt map[string]any
	if err := json.Unmarshal(in.ReplyTo, &rt); err != nil || rt["message_id"] != "om_1" || rt["open_id"] != testUserOpen {
		t.Fatalf("reply address %s", in.ReplyTo)
	}
}

func TestGroupMentions(t *testing.T) {
	r := newEventRig(t, "")
	bot := feishutest.Mention{Key: "@_user_1", OpenID: r.api.BotOpenID, Name: "Hermes"}
	lisi := feishutest.Mention{Key: "@_user_2", OpenID: "ou_lisi", UserID: "lisi", Name: "李四"}

	t.Run("WithoutMentionIgnored", func(t *testing.T) {
		status, _ := r.post(t, feishutest.EventJSON(message("om_g1", "group", "大家好")))
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		acc, calls := r.sink.Answered(), r.sink.Calls()
		if calls != 1 || len(acc) != 0 {
			t.Fatalf("calls %d, accepted %d: a group message without @ must not be answered", calls, len(acc))
		}
	})
	t.Run("OtherMentionNotTheBot", func(t *testing.T) {
		r.post(t, feishutest.EventJSON(message("om_g2", "group", "@_user_2 你好", lisi)))
		if acc := r.sink.Answered(); len(acc) != 0 {
			t.Fatalf("accepted %+v", acc)
		}
	})
	t.Run("BotMentionedAndStripped", func(t *testing.T) {
		r.post(t, feishutest.EventJSON(message("om_g3", "group", "@_user_1 帮 @_user_2 查一下工资条", bot, lisi)))
		acc := r.sink.Answered()
		if len(acc) != 1 {
			t.Fatalf("accepted %d", len(acc))
		}
		if in := acc[0]; !in.Mentioned || in.Text != "帮 @李四 查一下工资条" || in.ChatType != channels.ChatGroup {
			t.Fatalf("got mentioned=%v text=%q", in.Mentioned, in.Text)
		}
	})
}

func TestForgedEventsRefused(t *testing.T) {
	r := newEventRig(t, "")
	plain := feishutest.EventJSON(message("om_f", "p2p", "hi"))
	t.Run("ErrSignature", func(t *testing.T) {
		h, body := feishutest.EncryptedRequest(r.crypto, plain, time.Now())
		h.Set(feishu.HeaderSignature, strings.Repeat("0", 64))
		status, _, _ := feishutest.Post(http.DefaultClient, r.url, h, body)
		if status != http.StatusUnauthorized {
			t.Fatalf("got %d", status)
		}
	})
	t.Run("ErrSignatureOtherKey", func(t *testing.T) {
		h, body := feishutest.EncryptedRequest(feishu.NewCrypto("attacker key"), plain, time.Now())
		if status, _, _ := feishutest.Post(http.DefaultClient, r.url, h, body); status != http.StatusBadRequest && status != http.StatusUnauthorized {
			t.Fatalf("got %d", status)
		}
	})
	t.Run("ErrToken", func(t *testing.T) {
		m := message("om_f", "p2p", "hi")
		m.Token = "forged"
		if status, _ := r.post(t, feishutest.EventJSON(m)); status != http.StatusUnauthorized {
			t.Fatalf("got %d", status)
		}
	})
	t.Run("Unencrypted", func(t *testing.T) {
		if status, _, _ := feishutest.Post(http.DefaultClient, r.url, http.Header{}, plain); status != http.StatusUnauthorized {
			t.Fatalf("got %d", status)
		}
	})
	if calls := r.sink.Calls(); calls != 0 {
		t.Fatalf("a refused event reached the sink %d times", calls)
	}
	refused := r.sink.Refusals()
	if got := strings.Join(refused, " "); !strings.HasPrefix(got, testAccount+"/signature ") ||
		!strings.Contains(got, testAccount+"/token") || len(refused) != 4 {
		t.Fatalf("refusals recorded: %s", got)
	}
}

// A signed event is good only near the time it was signed: a captured one
// cannot be posted again later (issue 16, item 3).
func TestStaleTimestampRefused(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	r := newEventRigSection(t, func(base string) string { return appYAML(base, feishu.ModeHTTP, "") },
		channels.Env{Now: func() time.Time { return now }})
	send := func(t *testing.T, id string, ts time.Time, mutate func(http.Header)) int {
		t.Helper()
		h, body := feishutest.EncryptedRequest(r.crypto, feishutest.EventJSON(message(id, "p2p", "hi")), ts)
		if mutate != nil {
			mutate(h)
		}
		status, _, err := feishutest.Post(http.DefaultClient, r.url, h, body)
		if err != nil {
			t.Fatal(err)
		}
		return status
	}
	for name, tc := range map[string]struct {
		ts     time.Time
		status int
	}{
		"Year2017":      {time.Unix(1_500_000_000, 0), http.StatusUnauthorized},
		"JustStale":     {now.Add(-feishu.DefaultTimestampWindow - time.Second), http.StatusUnauthorized},
		"FarFuture":     {now.Add(feishu.DefaultTimestampWindow + time.Second), http.StatusUnauthorized},
		"InsideWindow":  {now.Add(-feishu.DefaultTimestampWindow + time.Second), http.StatusOK},
		"SlightlyAhead": {now.Add(30 * time.Second), http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			if got := send(t, "om_ts_"+name, tc.ts, nil); got != tc.status {
				t.Fatalf("got %d, want %d", got, tc.status)
			}
		})
	}
	t.Run("NotANumber", func(t *testing.T) {
		// Signed over the bad value, so only the timestamp check can refuse it.
		h, body := feishutest.EncryptedRequest(r.crypto, feishutest.EventJSON(message("om_ts_nan", "p2p", "hi")), now)
		h.Set(feishu.HeaderTimestamp, "soon")
		h.Set(feishu.HeaderSignature, r.crypto.Signature("soon", h.Get(feishu.HeaderNonce), body))
		if status, _, _ := feishutest.Post(http.DefaultClient, r.url, h, body); status != http.StatusUnauthorized {
			t.Fatalf("got %d", status)
		}
	})
	t.Run("SignatureFirst", func(t *testing.T) {
		// A forger's stale request fails the signature, not the clock: the
		// answer says nothing about our time.
		send(t, "om_ts_forged", time.Unix(1_500_000_000, 0), func(h http.Header) { h.Set(feishu.HeaderSignature, strings.Repeat("0", 64)) })
	})

	acc := r.sink.Answered()
	var ids []string
	for _, in := range acc {
		ids = append(ids, in.MsgID)
	}
	if got := strings.Join(ids, " "); len(acc) != 2 || !strings.Contains(got, "om_ts_InsideWindow") || !strings.Contains(got, "om_ts_SlightlyAhead") {
		t.Fatalf("accepted %s; only the two inside the window may be", got)
	}
	want := map[string]int{testAccount + "/timestamp": 4, testAccount + "/signature": 1}
	got := map[string]int{}
	for _, k := range r.sink.Refusals() {
		got[k]++
	}
	if !maps.Equal(got, want) {
		t.Fatalf("refusals recorded %v, want %v", got, want)
	}
}

// feishu.timestamp_window widens (or narrows) the window.
func TestTimestampWindowConfigured(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	r := newEventRigSection(t, func(base string) string {
		return "timestamp_window: 1h\n" + appYAML(base, feishu.ModeHTTP, "")
	}, channels.Env{Now: func() time.Time { return now }})
	for i, tc := range []struct {
		age    time.Duration
		status int
	}{{50 * time.Minute, http.StatusOK}, {61 * time.Minute, http.StatusUnauthorized}} {
		h, body := feishutest.EncryptedRequest(r.crypto, feishutest.EventJSON(message(fmt.Sprintf("om_w%d", i), "p2p", "hi")), now.Add(-tc.age))
		if status, _, _ := feishutest.Post(http.DefaultClient, r.url, h, body); status != tc.status {
			t.Fatalf("signed %s ago: got %d, want %d", tc.age, status, tc.status)
		}
	}
}

// A name behind a key the text repeats would multiply the text: the event
// is refused rather than grown past the payload cap.
func TestMentionAmplificationRefused(t *testing.T) {
	r := newEventRig(t, "")
	long := feishutest.Mention{Key: "@_user_2", OpenID: "ou_lisi", Name: strings.Repeat("李", 100)}
	m := message("om_amp", "group", "@_user_1 "+strings.Repeat("@_user_2", 20_000),
		feishutest.Mention{Key: "@_user_1", OpenID: r.api.BotOpenID, Name: "Hermes"}, long)
	if status, _ := r.post(t, feishutest.EventJSON(m)); status != http.StatusBadRequest {
		t.Fatalf("got %d, want 400", status)
	}
	if calls := r.sink.Calls(); calls != 0 {
		t.Fatal("the event reached the sink")
	}
}

func TestAcceptFailureAnswers503(t *testing.T) {
	r := newEventRig(t, "")
	r.sink.FailWith(errors.Join(channels.ErrUnavailable, errors.New("postgres down")))
	if status, _ := r.post(t, feishutest.EventJSON(message("om_x", "p2p", "hi"))); status != http.StatusServiceUnavailable {
		t.Fatalf("got %d, want 503 so that Feishu retries", status)
	}
}

func TestMissingUserIDScopeDropsWithLog(t *testing.T) {
	r := newEventRig(t, "")
	m := message("om_u", "p2p", "hi")
	m.UserID = ""
	if status, _ := r.post(t, feishutest.EventJSON(m)); status != 200 {
		t.Fatalf("status %d", status)
	}
	if calls := r.sink.Calls(); calls != 0 {
		t.Fatal("a message without the configured id was stored")
	}
}

func TestOpenIDMode(t *testing.T) {
	r := newEventRig(t, "    id_type: open_id\n")
	m := message("om_o", "p2p", "hi")
	m.UserID = ""
	r.post(t, feishutest.EventJSON(m))
	acc := r.sink.Answered()
	if len(acc) != 1 || acc[0].Sender.UserID != testUserOpen {
		t.Fatalf("got %+v", acc)
	}
}

func TestPostMessageFlattened(t *testing.T) {
	r := newEventRig(t, "")
	m := message("om_p", "p2p", "")
	m.Type = "post"
	m.Content = `{"title":"请假","content":[[{"tag":"text","text":"明天"},{"tag":"a","text":"流程","href":"https://oa.example/leave"}]]}`
	r.post(t, feishutest.EventJSON(m))
	acc := r.sink.Answered()
	if len(acc) != 1 || acc[0].Text != "请假\n明天流程 (https://oa.example/leave)" {
		t.Fatalf("got %+v", acc)
	}
}
