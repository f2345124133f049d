package wecomtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

type answer struct {
	ErrCode     int    `json:"errcode"`
	ErrMsg      string `json:"errmsg"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
	MsgID       string `json:"msgid"`
}

func call(t *testing.T, method, u, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: HTTP %d", method, u, resp.StatusCode)
	}
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

func token(t *testing.T, s *wecomtest.Server, corpID, secret string) answer {
	t.Helper()
	return call(t, http.MethodGet, s.URL()+"/cgi-bin/gettoken?corpid="+url.QueryEscape(corpID)+"&corpsecret="+url.QueryEscape(secret), "")
}

func send(t *testing.T, s *wecomtest.Server, tok, body string) answer {
	t.Helper()
	return call(t, http.MethodPost, s.URL()+"/cgi-bin/message/send?access_token="+url.QueryEscape(tok), body)
}

func TestServer_GetToken(t *testing.T) {
	s := wecomtest.NewServer(t, "ww1", "sec")
	if a := token(t, s, "ww1", "sec"); a.ErrCode != 0 || a.AccessToken == "" || a.ExpiresIn != 7200 {
		t.Fatalf("gettoken = %+v", a)
	}
	if a := token(t, s, "ww1", "wrong"); a.ErrCode != 40001 || a.AccessToken != "" {
		t.Fatalf("wrong secret = %+v, want 40001", a)
	}
	if a := token(t, s, "ww2", "sec"); a.ErrCode != 40013 {
		t.Fatalf("wrong corp = %+v, want 40013", a)
	}
	if n := s.TokenRequests(); n != 3 {
		t.Fatalf("TokenRequests = %d, want 3", n)
	}
}

func TestServer_Send(t *testing.T) {
	s := wecomtest.NewServer(t, "ww1", "sec")
	tok := token(t, s, "ww1", "sec").AccessToken

	if a := send(t, s, "nope", `{"touser":"u","msgtype":"text","agentid":1,"text":{"content":"x"}}`); a.ErrCode != 40014 {
		t.Fatalf("unknown token = %+v, want 40014", a)
	}
	// agentid as WeCom documents it (integer) and as silenceper sends it (string).
	a := send(t, s, tok, `{"touser":"zhangsan","msgtype":"text","agentid":1000002,"text":{"content":"hello"}}`)
	if a.ErrCode != 0 || a.MsgID == "" {
		t.Fatalf("send = %+v", a)
	}
	if a := send(t, s, tok, `{"touser":"lisi","msgtype":"text","agentid":"1000002","text":{"content":"hi"}}`); a.ErrCode != 0 {
		t.Fatalf("string agentid = %+v", a)
	}
	if a := send(t, s, tok, `{"touser":"lisi","msgtype":"text","agentid":"x","text":{"content":"hi"}}`); a.ErrCode != 40056 {
		t.Fatalf("bad agentid = %+v, want 40056", a)
	}
	if a := send(t, s, tok, `{"touser":"lisi","msgtype":"text","agentid":1,"text":{"content":""}}`); a.ErrCode != 44004 {
		t.Fatalf("empty content = %+v, want 44004", a)
	}
	long := strings.Repeat("x", 2049)
	if a := send(t, s, tok, `{"touser":"wangwu","msgtype":"text","agentid":1,"text":{"content":"`+long+`"}}`); a.ErrCode != 0 {
		t.Fatalf("long = %+v", a)
	}
	msgs := s.Messages()
	if len(msgs) != 3 {
		t.Fatalf("%d delivered, want 3", len(msgs))
	}
	if m := msgs[0]; m.ToUser != "zhangsan" || m.AgentID != "1000002" || m.Content != "hello" || m.MsgID != a.MsgID {
		t.Fatalf("first = %+v", m)
	}
	if m := msgs[2]; !m.Truncated || len(m.Content) != 2048 {
		t.Fatalf("long text: truncated=%v len=%d, want WeCom's cut at 2048", m.Truncated, len(m.Content))
	}

	s.InvalidateTokens()
	if a := send(t, s, tok, `{"touser":"u","msgtype":"text","agentid":1,"text":{"content":"x"}}`); a.ErrCode != 40014 {
		t.Fatalf("after InvalidateTokens = %+v, want 40014", a)
	}
}

func TestServer_FailNextSends(t *testing.T) {
	s := wecomtest.NewServer(t, "ww1", "sec")
	tok := token(t, s, "ww1", "sec").AccessToken
	s.FailNextSends(45009, 2)
	body := `{"touser":"u","msgtype":"text","agentid":1,"text":{"content":"x"}}`
	for i := range 2 {
		if a := send(t, s, tok, body); a.ErrCode != 45009 {
			t.Fatalf("send %d = %+v, want 45009", i, a)
		}
	}
	if a := send(t, s, tok, body); a.ErrCode != 0 {
		t.Fatalf("third send = %+v", a)
	}
	if n := len(s.Messages()); n != 1 {
		t.Fatalf("%d delivered, want 1", n)
	}
}

func TestServer_DuplicateCheck(t *testing.T) {
	s := wecomtest.NewServer(t, "ww1", "sec")
	now := time.Unix(1700000000, 0)
	s.SetClock(func() time.Time { return now })
	tok := token(t, s, "ww1", "sec").AccessToken

	plain := `{"touser":"u","msgtype":"text","agentid":1,"text":{"content":"same"}}`
	checked := `{"touser":"u","msgtype":"text","agentid":1,"text":{"content":"same"},"enable_duplicate_check":1,"duplicate_check_interval":60}`

	first := send(t, s, tok, plain)
	if a := send(t, s, tok, checked); a.ErrCode != 0 || a.MsgID != first.MsgID {
		t.Fatalf("duplicate = %+v, want success with the original msgid %s", a, first.MsgID)
	}
	if n := len(s.Messages()); n != 1 {
		t.Fatalf("%d delivered, want 1 (duplicate suppressed)", n)
	}
	if a := send(t, s, tok, plain); a.ErrCode != 0 || len(s.Messages()) != 2 {
		t.Fatal("without enable_duplicate_check the same text is delivered again")
	}
	now = now.Add(61 * time.Second)
	if a := send(t, s, tok, checked); a.ErrCode != 0 || len(s.Messages()) != 3 {
		t.Fatalf("after the interval the text is delivered again; %d delivered", len(s.Messages()))
	}
	reqs := s.Requests()
	if len(reqs) != 4 || !reqs[1].Duplicate || reqs[3].Duplicate {
		t.Fatalf("requests = %+v", reqs)
	}
}

func TestServer_WaitMessages(t *testing.T) {
	s := wecomtest.NewServer(t, "ww1", "sec")
	tok := token(t, s, "ww1", "sec").AccessToken

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.WaitMessages(ctx, 1); err == nil {
		t.Fatal("WaitMessages returned without a message or a live context")
	}

	errc := make(chan error, 1)
	go func() {
		for _, c := range []string{"a", "b"} {
			req, _ := http.NewRequest(http.MethodPost, s.URL()+"/cgi-bin/message/send?access_token="+tok,
				strings.NewReader(`{"touser":"u","msgtype":"text","agentid":1,"text":{"content":"`+c+`"}}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errc <- err
				return
			}
			resp.Body.Close()
		}
		errc <- nil
	}()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgs, err := s.WaitMessages(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != "a" || msgs[1].Content != "b" {
		t.Fatalf("msgs = %+v", msgs)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestTextMessageXML_EscapesContent(t *testing.T) {
	x := wecomtest.TextMessageXML("ww1", "u", "a ]]> b", "1", "2", 3)
	if !strings.Contains(x, "<![CDATA[a ]]]]><![CDATA[> b]]>") {
		t.Fatalf("xml = %s", x)
	}
}
