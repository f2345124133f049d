package gateway_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// Two self-built apps of two corps at once, each at its own callback path,
// each answered through its own API (and token) as its own agent.
func TestSeveralWeComAppsAtOnce(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	const (
		itCorp   = "ww2222222222222222"
		itSecret = "it-app-secret-0123456789"
		itToken  = "ItT0ken"
		itAESKey = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
		itAgent  = "1000005"
	)
	itAPI := wecomtest.NewServer(t, itCorp, itSecret)
	yaml := h.ConfigYAML("") + fmt.Sprintf(`
    - name: app-it
      corp_id: %s
      agent_id: "%s"
      secret: %s
      token: %s
      encoding_aes_key: %s
      api_base_url: %s
`, itCorp, itAgent, itSecret, itToken, itAESKey, itAPI.URL())
	cfg, err := config.ParseConfig([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	h.Model.Script(openaitest.Reply{Content: "收到"})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	gw, err := gateway.New(ctx, cfg, gateway.Deps{Pool: h.Pool, Logger: gatewaytest.Logger(t), Platforms: gatewaytest.Platforms})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop(ctx) })
	hd := gw.Handler()
	h.Serve(hd)

	// app-hr, as in every test.
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "你好", "m-1"), time.Now())
	if status, _ := gatewaytest.Post(t, u, body); status != 200 {
		t.Fatalf("app-hr callback answered %d", status)
	}
	// app-it, signed and encrypted with its own key; the same MsgId is a
	// different message in another app.
	itCrypto, err := wxbiz.NewCrypto(itToken, itAESKey, itCorp)
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	q, itBody := wecomtest.EncryptedCallback(itCrypto,
		wecomtest.TextMessageXML(itCorp, "wangwu", "你好", "m-1", itAgent, time.Now().Unix()), ts, "n1")
	if status, _ := gatewaytest.Post(t, h.Srv.URL+"/wecom/app-it/callback?"+q.Encode(), itBody); status != 200 {
		t.Fatalf("app-it callback answered %d", status)
	}
	// app-hr's key does not open app-it's door.
	if status, _ := gatewaytest.Post(t, h.Srv.URL+"/wecom/app-hr/callback?"+q.Encode(), itBody); status != 401 {
		t.Fatalf("app-it's callback on app-hr's path answered %d, want 401", status)
	}

	hrMsgs, err := h.WeComAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	itMsgs, err := itAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if len(h.WeComAPI.Messages()) != 1 || hrMsgs[0].ToUser != "zhangsan" || hrMsgs[0].AgentID != gatewaytest.AgentID {
		t.Fatalf("app-hr sent %+v", h.WeComAPI.Messages())
	}
	if len(itAPI.Messages()) != 1 || itMsgs[0].ToUser != "wangwu" || itMsgs[0].AgentID != itAgent {
		t.Fatalf("app-it sent %+v", itAPI.Messages())
	}
}
