package gatewaytest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

// The official WeCom sample app (protocols.md), reused as the test app.
const (
	CorpID  = "wx5823bf96d3bd56c7"
	Token   = "QDG6eK"
	AESKey  = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	AgentID = "1000002"
	App     = "app-hr"
)

// The test AI bot, in callback mode (BotToken, BotAESKey) or on a long
// connection (WSBotID, WSSecret).
const (
	BotName   = "bot-it"
	BotToken  = "BotT0ken"
	BotAESKey = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"
	WSBotID   = "aibBOTIT"
	WSSecret  = "ws-secret-0123456789"
)

// LocalFetchYAML lets a bot's callback URLs reach the fakes (response_url,
// media) on 127.0.0.1, which its default fetch_hosts refuse.
const LocalFetchYAML = "      fetch_hosts: [127.0.0.1]\n      fetch_allow_private: true\n"

// WSBotYAML adds a long-connection bot dialling url to the wecom section
// (StartExtra's extra).
func WSBotYAML(url string) string {
	return WSBotYAMLFetching(url, LocalFetchYAML)
}

// WSBotYAMLFetching is WSBotYAML with fetch (the bot's fetch_ keys; ""
// for the defaults).
func WSBotYAMLFetching(url, fetch string) string {
	return fmt.Sprintf("  bots:\n    - name: %s\n      mode: websocket\n      corp_id: %s\n      bot_id: %s\n      secret: %s\n      url: %s\n",
		BotName, CorpID, WSBotID, WSSecret, url) + fetch
}

// TextXML is a WeCom text message from user to the test app.
func TextXML(from, content, msgID string) string {
	return wecomtest.TextMessageXML(CorpID, from, content, msgID, AgentID, time.Now().Unix())
}

// CallbackRequest builds the encrypted POST WeCom would send to the test
// app, signed at ts: the URL and the body.
func (h *Harness) CallbackRequest(plainXML string, ts time.Time) (string, []byte) {
	nonce := strconv.FormatInt(h.nonce.Add(1), 10)
	q, body := wecomtest.EncryptedCallback(h.Crypto, plainXML, strconv.FormatInt(ts.Unix(), 10), nonce)
	return h.Srv.URL + "/wecom/" + App + "/callback?" + q.Encode(), body
}

// Post sends a callback and returns status and body.
func Post(t testing.TB, u string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(u, "text/xml", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
