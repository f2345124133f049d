package console_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// A callback signed with another Token (the usual copy-paste mistake) is
// refused; the refusal is counted by its check only, and the overview and
// the self-test say which check failed.
func TestForgedCallbackShowsTheFailedCheck(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wrong, err := wxbiz.NewCrypto("not-the-token", testAESKey, testCorpID)
	if err != nil {
		t.Fatal(err)
	}
	plain := wecomtest.TextMessageXML(testCorpID, "zhangsan", askedText, "msg-forged-1", "1000002", time.Now().Unix())
	q, body := wecomtest.EncryptedCallback(wrong, plain, strconv.FormatInt(time.Now().Unix(), 10), "nonce-1")
	resp, err := http.Post(f.srv.URL+"/wecom/"+testApp+"/callback?"+q.Encode(), "text/xml", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged callback: %d, want 401", resp.StatusCode)
	}

	var rows, inbound int
	var channel, account, check string
	var count int64
	if err := f.pool.QueryRow(ctx, `SELECT count(*) OVER (), channel, account, "check", count FROM callback_refusals`).
		Scan(&rows, &channel, &account, &check, &count); err != nil {
		t.Fatalf("refusal not recorded: %v", err)
	}
	if rows != 1 || channel != "wecom" || account != testApp || check != "signature" || count != 1 {
		t.Errorf("recorded %d rows, %s/%s %s ×%d; want one wecom/%s signature ×1", rows, channel, account, check, count, testApp)
	}
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM inbound_messages WHERE platform_msg_id = 'msg-forged-1'`).Scan(&inbound); err != nil || inbound != 0 {
		t.Errorf("forged message stored: %d, %v", inbound, err)
	}

	c := client(t)
	_, csrf := f.login(t, c, adminUser, adminPass)
	_, page := get(t, c, f.srv.URL+"/console/")
	if !strings.Contains(page, "签名校验失败（Token 或 EncodingAESKey 不对？") {
		t.Errorf("overview does not explain the refusal:\n%s", page)
	}
	noSecrets(t, "overview", page)
	// The refusal is counted in its period on the overview's chart.
	if n := sumColumn(t, chartRows(t, page, "chart-refused"), "wecom / "+testApp); n != 1 {
		t.Errorf("the refused callbacks chart counts %d for wecom/%s, want 1", n, testApp)
	}
	_, page = postForm(t, c, f.srv.URL+"/console/selftest", url.Values{"csrf": {csrf}, "channel": {"wecom"},
		"account": {testApp}, "target": {"zhangsan"}})
	if !strings.Contains(page, "最近一次回调被拒：签名校验失败（Token 或 EncodingAESKey 不对？") {
		t.Errorf("self-test does not show the last refusal:\n%s", page)
	}
	noSecrets(t, "self-test", page)
}
