package dingtalk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// callbackServer serves r's callback route with sink.
func callbackServer(t *testing.T, r *robot, sink channels.Sink) string {
	rt := r.route(sink)
	mux := http.NewServeMux()
	mux.HandleFunc(rt.Method+" "+rt.Path, rt.Handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + rt.Path
}

func do(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestCallback_SingleAndGroup(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, nil)
	sink := chantest.NewSink()
	u := callbackServer(t, r, sink)

	single := dingtalktest.Message{MsgID: "msg-1", Text: " 我还有几天年假？", ConversationID: "cid-single", StaffID: "zhangsan",
		Nick: "张三", CorpID: testCorpID, SessionWebhook: fake.SessionWebhook("s1"), WebhookExpiresAt: c.Now().Add(90 * time.Minute)}
	if got := do(t, dingtalktest.CallbackRequest(u, testAppSecret, c.Now(), single.JSON())); got != http.StatusOK {
		t.Fatalf("status %d", got)
	}
	groupAt := dingtalktest.Message{MsgID: "msg-2", Text: " 帮我查工资条", Group: true, InAtList: true, ConversationID: "cid-group",
		StaffID: "lisi"} // no senderCorpId: the robot's corp
	groupNoAt := dingtalktest.Message{MsgID: "msg-3", Text: "大家好", Group: true, ConversationID: "cid-group", StaffID: "lisi", CorpID: testCorpID}
	for _, m := range []dingtalktest.Message{groupAt, groupNoAt} {
		if got := do(t, dingtalktest.CallbackRequest(u, testAppSecret, c.Now(), m.JSON())); got != http.StatusOK {
			t.Fatalf("%s: status %d", m.MsgID, got)
		}
	}
	acc := sink.Accepted()
	if len(acc) != 3 {
		t.Fatalf("accepted %d, want 3", len(acc))
	}
	in := acc[0]
	if in.Channel != ChannelName || in.Account != "hr-bot" || in.MsgID != "msg-1" || in.ChatType != channels.ChatSingle ||
		in.ChatID != "cid-single" || in.Text != "我还有几天年假？" || in.MsgType != channels.TypeText {
		t.Errorf("single: %+v", in)
	}
	if in.Sender.UserID != "zhangsan" || in.Sender.CorpID != testCorpID || in.Sender.Name != "张三" {
		t.Errorf("single sender: %+v", in.Sender)
	}
	var rt replyTo
	if err := json.Unmarshal(in.ReplyTo, &rt); err != nil || rt.Group || rt.User != "zhangsan" || rt.Webhook == "" || rt.Card != "" {
		t.Errorf("single reply address: %s (%v)", in.ReplyTo, err)
	}
	if g := acc[1]; g.ChatType != channels.ChatGroup || !g.Mentioned || g.Text != "帮我查工资条" || g.Sender.CorpID != testCorpID {
		t.Errorf("group with @: %+v", g)
	}
	if g := acc[2]; g.Mentioned {
		t.Errorf("group without @: Mentioned = true")
	}
}

func TestCallback_Refused(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, nil)
	sink := chantest.NewSink()
	u := callbackServer(t, r, sink)
	m := dingtalktest.Message{MsgID: "msg-1", Text: "hi", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}

	forged := dingtalktest.CallbackRequest(u, "not-the-secret", c.Now(), m.JSON())
	stale := dingtalktest.CallbackRequest(u, testAppSecret, c.Now().Add(-61*time.Minute), m.JSON())
	bad := dingtalktest.CallbackRequest(u, testAppSecret, c.Now(), []byte(`{"msgId":`))
	// Signed, but the body names another corp: its staff id would be read
	// as one of ours.
	foreign := m
	foreign.CorpID = "dingothercorp"
	otherCorp := dingtalktest.CallbackRequest(u, testAppSecret, c.Now(), foreign.JSON())
	for _, tc := range []struct {
		name  string
		req   *http.Request
		want  int
		check string
	}{{"forged", forged, 401, "signature"}, {"stale", stale, 401, "timestamp"}, {"malformed", bad, 400, "malformed"},
		{"other corp", otherCorp, 401, "corp"}} {
		if got := do(t, tc.req); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
		refused := sink.Refusals()
		if len(refused) == 0 || refused[len(refused)-1] != "hr-bot/"+tc.check {
			t.Errorf("%s: refusals recorded %v, want last hr-bot/%s", tc.name, refused, tc.check)
		}
	}
	if n := len(sink.Accepted()); n != 0 {
		t.Errorf("accepted %d refused messages", n)
	}
	// Postgres down: 503 so that DingTalk retries.
	sink.FailWith(fmt.Errorf("%w: %w", channels.ErrUnavailable, errDown))
	if got := do(t, dingtalktest.CallbackRequest(u, testAppSecret, c.Now(), m.JSON())); got != http.StatusServiceUnavailable {
		t.Errorf("store down: status %d, want 503", got)
	}
	if n := len(sink.Refusals()); n != 4 {
		t.Errorf("a failed Accept is no refused callback: %d refusals recorded", n)
	}
}

// The 200 goes out only after Accept returned.
func TestCallback_AnswersAfterAccept(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, nil)
	sink := chantest.NewSink()
	gate := sink.Hold()
	u := callbackServer(t, r, sink)
	m := dingtalktest.Message{MsgID: "msg-1", Text: "hi", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}

	answered := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(dingtalktest.CallbackRequest(u, testAppSecret, c.Now(), m.JSON()))
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case s := <-answered:
		t.Fatalf("answered %d before Accept returned", s)
	case <-time.After(50 * time.Millisecond): // a negative check: nothing may come while the gate is shut
	}
	close(gate)
	if s := <-answered; s != http.StatusOK {
		t.Fatalf("status %d", s)
	}
	if len(sink.Accepted()) != 1 {
		t.Fatal("not accepted")
	}
}

func TestDecodeMessage(t *testing.T) {
	c := newClock()
	r := &robot{cfg: RobotSection{Name: "hr-bot", CorpID: testCorpID, RobotName: "HR助手", APIBaseURL: "https://api.dingtalk.com",
		OAPIBaseURL: "https://oapi.dingtalk.com", CardTemplateID: "tpl"}, now: c.Now}
	t.Run("StripsOwnMention", func(t *testing.T) {
		m := dingtalktest.Message{MsgID: "m", Text: "@HR助手  请假流程", Group: true, InAtList: true, ConversationID: "cid", StaffID: "u"}
		in, ok, err := r.decodeMessage(m.JSON())
		if err != nil || !ok || in.Text != "请假流程" || in.Sender.CorpID != testCorpID {
			t.Fatalf("%+v %v %v", in, ok, err)
		}
	})
	t.Run("ForeignWebhookDropped", func(t *testing.T) {
		m := dingtalktest.Message{MsgID: "m", Text: "x", ConversationID: "cid", StaffID: "u",
			SessionWebhook: "http://169.254.169.254/latest", WebhookExpiresAt: c.Now().Add(time.Hour)}
		in, _, _ := r.decodeMessage(m.JSON())
		var rt replyTo
		_ = json.Unmarshal(in.ReplyTo, &rt)
		if rt.Webhook != "" {
			t.Errorf("webhook %q kept", rt.Webhook)
		}
		if rt.Card != outTrackID("hr-bot", "m") || rt.Received != c.Now().UnixMilli() {
			t.Errorf("card %q received %d", rt.Card, rt.Received)
		}
	})
	t.Run("NoStaffIDNotStored", func(t *testing.T) {
		m := dingtalktest.Message{MsgID: "m", Text: "x", ConversationID: "cid"}
		if _, ok, err := r.decodeMessage(m.JSON()); ok || err != nil {
			t.Errorf("ok=%v err=%v", ok, err)
		}
	})
	t.Run("ErrCorp", func(t *testing.T) {
		// Even without a staff id (which alone would be acknowledged and
		// dropped), a foreign corp is a refusal.
		for _, m := range []dingtalktest.Message{
			{MsgID: "m", Text: "x", ConversationID: "cid", StaffID: "u", CorpID: "dingothercorp"},
			{MsgID: "m", Text: "x", ConversationID: "cid", CorpID: "dingothercorp"},
		} {
			if _, ok, err := r.decodeMessage(m.JSON()); !errors.Is(err, ErrCorp) || !errors.Is(err, channels.ErrUnauthorized) || ok {
				t.Errorf("staff %q: ok=%v err=%v, want ErrCorp", m.StaffID, ok, err)
			}
		}
	})
	t.Run("ErrMalformed", func(t *testing.T) {
		for _, body := range []string{`[]`, `{"msgtype":"text"}`} {
			if _, _, err := r.decodeMessage([]byte(body)); !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: %v", body, err)
			}
		}
	})
}
