package skills_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

func TestSignedRequest_Format(t *testing.T) {
	sr := skills.SignedRequest{Method: "POST", Host: "hr.example.com:8443", Path: "/api/tickets/INC-1/status", Query: "lang=zh",
		BodySHA256: skills.BodySHA256([]byte(`{"days":2}`)), Nonce: "0123456789abcdef0123456789abcdef", Audience: "it_ticket_status",
		Identity: skills.SignedIdentity{UserID: "zhangsan", Channel: "wecom", Account: "app-hr", CorpID: "ww123", ChatID: "chat-9", Timestamp: 1767225600}}
	// The signed string is a contract with backends in other languages:
	// written out here by hand.
	want := "HERMES-HMAC-SHA256-v2\nPOST\nhr.example.com:8443\n/api/tickets/INC-1/status\nlang=zh\n" +
		"a87cebe63806830d1aeb144cb5fa2293b9416069f786bc9854d66fae6f563d07\n" +
		"0123456789abcdef0123456789abcdef\nit_ticket_status\n1767225600\nzhangsan\nwecom\napp-hr\nww123\nchat-9"
	if got := sr.StringToSign(); got != want {
		t.Errorf("StringToSign =\n%q\nwant\n%q", got, want)
	}
	sum := sha256.Sum256([]byte(`{"days":2}`))
	if sr.BodySHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("BodySHA256 = %s", sr.BodySHA256)
	}
	mac := hmac.New(sha256.New, testKey)
	mac.Write([]byte(want))
	if got := sr.Sign(testKey); got != hex.EncodeToString(mac.Sum(nil)) {
		t.Errorf("Sign = %s", got)
	}
}

// signedRequest builds a request as Hermes would send it to path with body.
func signedRequest(method, target, body, audience, nonce string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	sr := skills.SignedRequest{Method: method, Host: r.Host, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
		BodySHA256: skills.BodySHA256([]byte(body)), Nonce: nonce, Audience: audience,
		Identity: skills.SignedIdentity{UserID: "zhangsan", Channel: "wecom", CorpID: "ww123", Timestamp: testNow.Unix()}}
	for k, v := range map[string]string{skills.HeaderUserID: "zhangsan", skills.HeaderChannel: "wecom", skills.HeaderCorpID: "ww123",
		skills.HeaderTimestamp: strconv.FormatInt(testNow.Unix(), 10), skills.HeaderNonce: nonce,
		skills.HeaderSignature: sr.Sign(testKey)} {
		r.Header.Set(k, v)
	}
	return r
}

func TestVerifyRequest(t *testing.T) {
	const body = `{"days":2}`
	opts := func(mut func(o *skills.VerifyOptions)) skills.VerifyOptions {
		o := skills.VerifyOptions{Audience: "hr_leave_apply", Now: testNow.Add(4 * time.Minute), Nonces: skills.NewNonceCache()}
		if mut != nil {
			mut(&o)
		}
		return o
	}
	req := func(mut func(r *http.Request)) *http.Request {
		r := signedRequest("POST", "/hr/leave?x=1", body, "hr_leave_apply", "n-1")
		if mut != nil {
			mut(r)
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		r       *http.Request
		body    string
		opts    skills.VerifyOptions
		wantErr error
	}{
		{"OK", req(nil), body, opts(nil), nil},
		{"ErrOtherPath", req(func(r *http.Request) { r.URL.Path = "/it/password/reset" }), body, opts(nil), skills.ErrIdentityInvalid},
		{"ErrOtherQuery", req(func(r *http.Request) { r.URL.RawQuery = "x=2" }), body, opts(nil), skills.ErrIdentityInvalid},
		{"ErrOtherBody", req(nil), `{"days":20}`, opts(nil), skills.ErrIdentityInvalid},
		{"ErrOtherMethod", req(func(r *http.Request) { r.Method = "PUT" }), body, opts(nil), skills.ErrIdentityInvalid},
		{"ErrOtherHost", req(func(r *http.Request) { r.Host = "payroll.internal" }), body, opts(nil), skills.ErrIdentityInvalid},
		{"ErrOtherAudience", req(nil), body, opts(func(o *skills.VerifyOptions) { o.Audience = "it_password_reset" }), skills.ErrIdentityInvalid},
		{"ErrOtherUser", req(func(r *http.Request) { r.Header.Set(skills.HeaderUserID, "lisi") }), body, opts(nil), skills.ErrIdentityInvalid},
		{"ErrOtherNonce", req(func(r *http.Request) { r.Header.Set(skills.HeaderNonce, "n-2") }), body, opts(nil), skills.ErrIdentityInvalid},
		{"ErrWrongKey", req(nil), body, opts(nil), skills.ErrIdentityInvalid},
		{"ErrNoNonce", req(func(r *http.Request) { r.Header.Del(skills.HeaderNonce) }), body, opts(nil), skills.ErrIdentityMissing},
		{"ErrNoSignature", req(func(r *http.Request) { r.Header.Del(skills.HeaderSignature) }), body, opts(nil), skills.ErrIdentityMissing},
		{"ErrExpired", req(nil), body, opts(func(o *skills.VerifyOptions) { o.Now = testNow.Add(6 * time.Minute) }), skills.ErrIdentityExpired},
		{"ErrFuture", req(nil), body, opts(func(o *skills.VerifyOptions) { o.Now = testNow.Add(-6 * time.Minute) }), skills.ErrIdentityExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := testKey
			if tc.name == "ErrWrongKey" {
				key = []byte("other")
			}
			id, err := skills.VerifyRequest(tc.r, []byte(tc.body), key, tc.opts)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr != nil && err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && (id.UserID != "zhangsan" || id.CorpID != "ww123") {
				t.Errorf("identity = %+v", id)
			}
		})
	}
	t.Run("ErrReplayed", func(t *testing.T) {
		o := opts(nil)
		if _, err := skills.VerifyRequest(req(nil), []byte(body), testKey, o); err != nil {
			t.Fatalf("first use: %v", err)
		}
		if _, err := skills.VerifyRequest(req(nil), []byte(body), testKey, o); !errors.Is(err, skills.ErrReplayed) {
			t.Fatalf("second use: err = %v, want ErrReplayed", err)
		}
	})
}

func TestNonceCache_ForgetsAfterTheWindow(t *testing.T) {
	c := skills.NewNonceCache()
	exp := testNow.Add(5 * time.Minute)
	if !c.Use("n", exp, testNow) || c.Use("n", exp, testNow.Add(time.Minute)) {
		t.Fatal("a nonce must be usable once within its window")
	}
	// After the window the signature's timestamp fails on its own; the
	// cache may forget the nonce.
	if !c.Use("n", exp.Add(5*time.Minute), exp) {
		t.Error("an expired nonce was kept")
	}
}
