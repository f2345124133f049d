package wecom

import (
	"testing"
	"time"

	"github.com/silenceper/wechat/v2/cache"
)

func TestAPIBaseRegistry_Rewrite(t *testing.T) {
	r := newAPIBaseRegistry()
	r.registerApp("wwcorp", "s", "http://127.0.0.1:9/private")
	r.registerApp("wwcorp", "s2", "http://127.0.0.1:9/other") // same corp, another app and base
	r.registerApp("wwcorp", "s", "http://127.0.0.1:9/private")
	r.noteToken("wwcorp/1", "tok1", "http://127.0.0.1:9/private")

	for _, tt := range []struct{ in, want string }{
		{ // gettoken routed by corpid, path prefix kept
			"https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=wwcorp&corpsecret=s",
			"http://127.0.0.1:9/private/cgi-bin/gettoken?corpid=wwcorp&corpsecret=s",
		},
		{ // API calls routed by access_token
			"https://qyapi.weixin.qq.com/cgi-bin/message/send?access_token=tok1",
			"http://127.0.0.1:9/private/cgi-bin/message/send?access_token=tok1",
		},
		{ // the other app of the corp: routed by its secret
			"https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=wwcorp&corpsecret=s2",
			"http://127.0.0.1:9/other/cgi-bin/gettoken?corpid=wwcorp&corpsecret=s2",
		},
		{ // unknown corp and token: left alone
			"https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=other&corpsecret=s",
			"https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=other&corpsecret=s",
		},
		{
			"https://qyapi.weixin.qq.com/cgi-bin/message/send?access_token=unknown",
			"https://qyapi.weixin.qq.com/cgi-bin/message/send?access_token=unknown",
		},
		{ // not WeCom (official account API): left alone even with a known corp id
			"https://api.weixin.qq.com/cgi-bin/token?corpid=wwcorp",
			"https://api.weixin.qq.com/cgi-bin/token?corpid=wwcorp",
		},
	} {
		if got := r.rewrite(tt.in); got != tt.want {
			t.Errorf("rewrite(%s)\n = %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestAPIBaseRegistry_KeepsRecentTokens(t *testing.T) {
	r := newAPIBaseRegistry()
	const base = "http://fake"
	for i := range 6 {
		r.noteToken("app", "tok"+string(rune('a'+i)), base)
		r.noteToken("app", "tok"+string(rune('a'+i)), base) // repeated Gets do not evict
	}
	if len(r.tokens) != recentTokensPerApp {
		t.Fatalf("%d tokens mapped, want %d", len(r.tokens), recentTokensPerApp)
	}
	if _, ok := r.tokens["toka"]; ok {
		t.Fatal("oldest token still mapped")
	}
	if _, ok := r.tokens["tokf"]; !ok {
		t.Fatal("newest token not mapped")
	}
	// Another app's tokens are not evicted by this one's.
	r.noteToken("other", "tokz", base)
	r.noteToken("app", "tokg", base)
	if _, ok := r.tokens["tokz"]; !ok {
		t.Fatal("another app's token was evicted")
	}
}

// The key must be the one silenceper's WorkAccessToken uses, or dropping an
// invalid token would drop nothing.
func TestTokenCacheKey(t *testing.T) {
	if got := tokenCacheKey("ww1", "1000002"); got != "gowechat_work__access_token_ww1_1000002" {
		t.Fatalf("key = %s", got)
	}
}

func TestAppTokenCache_HandsSilenceperStrings(t *testing.T) {
	mem := cache.NewMemory()
	tc := &appTokenCache{inner: mem, key: "k", appKey: "a", base: "http://x"}
	for _, v := range []any{"", 42, nil} {
		_ = mem.Set("k", v, time.Minute)
		if got := tc.Get("k"); got != nil {
			t.Fatalf("Get with stored %#v = %#v, want nil (a miss)", v, got)
		}
	}
	_ = mem.Set("k", []byte("tok"), time.Minute)
	if got := tc.Get("k"); got != "tok" {
		t.Fatalf("Get = %#v, want \"tok\"", got)
	}
}
