package channels_test

import (
	"testing"

	"github.com/hermes-gw/hermes/channels"
)

func TestParseBaseURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://qyapi.weixin.qq.com":     "https://qyapi.weixin.qq.com",
		"http://127.0.0.1:9/private/":     "http://127.0.0.1:9/private",
		"https://api.dingtalk.com//":      "https://api.dingtalk.com",
		"https://open.feishu.cn/prefix/x": "https://open.feishu.cn/prefix/x",
	} {
		if got, err := channels.ParseBaseURL(raw, "http", "https"); err != nil || got != want {
			t.Errorf("ParseBaseURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "open.feishu.cn", "ftp://x", "https://", "https://u:p@host", "https://host?key=1", "https://host#frag", "wss://host", "%"} {
		if got, err := channels.ParseBaseURL(raw, "http", "https"); err == nil {
			t.Errorf("ParseBaseURL(%q) = %q, want an error", raw, got)
		}
	}
	if _, err := channels.ParseBaseURL("wss://openws.work.weixin.qq.com", "ws", "wss"); err != nil {
		t.Errorf("wss URL refused: %v", err)
	}
}

func TestCheckAccountName(t *testing.T) {
	for _, ok := range []string{"hr", "app-hr", "0bot", "a23456789012345678901234567890123456789012345678901234567890123"} {
		if err := channels.CheckAccountName(ok); err != nil {
			t.Errorf("CheckAccountName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-hr", "HR", "app.hr", "app_hr", "a/b", "a234567890123456789012345678901234567890123456789012345678901234"} {
		if err := channels.CheckAccountName(bad); err == nil {
			t.Errorf("CheckAccountName(%q) accepted", bad)
		}
	}
}
