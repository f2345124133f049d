package feishu_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

// eventRig is one app in http mode behind an HTTP server, with a fake
// OpenAPI and an in-memory sink.
type eventRig struct {
	api    *feishutest.Server
	sink   *memSink
	ch     *feishu.Channel
	url    string
	crypto *feishu.Crypto
}

func newEventRig(t *testing.T, extra string) *eventRig {
	t.Helper()
	r := &eventRig{api: feishutest.NewServer(t, testAppID, testSecret), sink: newMemSink(), crypto: feishu.NewCrypto(testEncrypt)}
	r.ch = newChannel(t, appYAML(r.api.URL(), feishu.ModeHTTP, extra), channels.Env{})
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
	acc, _, _ := r.sink.snapshot()
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
		acc, calls, _ := r.sink.snapshot()
		if calls != 1 || len(acc) != 0 {
			t.Fatalf("calls %d, accepted %d: a group message without @ must not be answered", calls, len(acc))
		}
	})
	t.Run("OtherMentionNotTheBot", func(t *testing.T) {
		r.post(t, feishutest.EventJSON(message("om_g2", "group", "@_user_2 你好", lisi)))
		if acc, _, _ := r.sink.snapshot(); len(acc) != 0 {
			t.Fatalf("accepted %+v", acc)
		}
	})
	t.Run("BotMentionedAndStripped", func(t *testing.T) {
		r.post(t, feishutest.EventJSON(message("om_g3", "group", "@_user_1 帮 @_user_2 查一下工资条", bot, lisi)))
		acc, _, _ := r.sink.snapshot()
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
	if _, calls, _ := r.sink.snapshot(); calls != 0 {
		t.Fatalf("a refused event reached the sink %d times", calls)
	}
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	if got := strings.Join(r.sink.refused, " "); !strings.HasPrefix(got, testAccount+"/signature ") ||
		!strings.Contains(got, testAccount+"/token") || len(r.sink.refused) != 4 {
		t.Fatalf("refusals recorded: %s", got)
	}
}

func TestAcceptFailureAnswers503(t *testing.T) {
	r := newEventRig(t, "")
	r.sink.fail = errors.Join(channels.ErrUnavailable, errors.New("postgres down"))
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
	if _, calls, _ := r.sink.snapshot(); calls != 0 {
		t.Fatal("a message without the configured id was stored")
	}
}

func TestOpenIDMode(t *testing.T) {
	r := newEventRig(t, "    id_type: open_id\n")
	m := message("om_o", "p2p", "hi")
	m.UserID = ""
	r.post(t, feishutest.EventJSON(m))
	acc, _, _ := r.sink.snapshot()
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
	acc, _, _ := r.sink.snapshot()
	if len(acc) != 1 || acc[0].Text != "请假\n明天流程 (https://oa.example/leave)" {
		t.Fatalf("got %+v", acc)
	}
}
