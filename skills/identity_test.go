package skills_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

func TestSignIdentity_Format(t *testing.T) {
	id := skills.SignedIdentity{UserID: "zhangsan", Channel: "wecom", Account: "app-hr", CorpID: "ww123", ChatID: "chat-9", Timestamp: 1767225600}
	// The signing string is a contract with backends in other languages:
	// compute it independently here.
	mac := hmac.New(sha256.New, testKey)
	mac.Write([]byte("v1\nzhangsan\nwecom\napp-hr\nww123\nchat-9\n1767225600"))
	if got, want := skills.SignIdentity(testKey, id), hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Errorf("SignIdentity = %s, want %s", got, want)
	}
}

func TestVerifyIdentity(t *testing.T) {
	id := skills.SignedIdentity{UserID: "zhangsan", Channel: "wecom", Account: "app-hr", CorpID: "ww123", ChatID: "chat-9", Timestamp: testNow.Unix()}
	signed := func(mutate func(h map[string]string)) map[string]string {
		h := map[string]string{
			skills.HeaderUserID: id.UserID, skills.HeaderChannel: id.Channel, skills.HeaderAccount: id.Account,
			skills.HeaderCorpID: id.CorpID, skills.HeaderChatID: id.ChatID,
			skills.HeaderTimestamp: strconv.FormatInt(id.Timestamp, 10), skills.HeaderSignature: skills.SignIdentity(testKey, id),
		}
		if mutate != nil {
			mutate(h)
		}
		return h
	}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		key     []byte
		now     time.Time
		wantErr error
	}{
		{"OK", signed(nil), testKey, testNow.Add(4 * time.Minute), nil},
		{"ErrOtherUser", signed(func(h map[string]string) { h[skills.HeaderUserID] = "lisi" }), testKey, testNow, skills.ErrIdentityInvalid},
		{"ErrOtherChat", signed(func(h map[string]string) { h[skills.HeaderChatID] = "chat-1" }), testKey, testNow, skills.ErrIdentityInvalid},
		{"ErrOtherTimestamp", signed(func(h map[string]string) { h[skills.HeaderTimestamp] = "1" }), testKey, testNow, skills.ErrIdentityInvalid},
		{"ErrWrongKey", signed(nil), []byte("other"), testNow, skills.ErrIdentityInvalid},
		{"ErrEmptyKey", signed(nil), nil, testNow, skills.ErrIdentityInvalid},
		{"ErrNotHex", signed(func(h map[string]string) { h[skills.HeaderSignature] = "zz" }), testKey, testNow, skills.ErrIdentityInvalid},
		{"ErrMissingSignature", signed(func(h map[string]string) { delete(h, skills.HeaderSignature) }), testKey, testNow, skills.ErrIdentityMissing},
		{"ErrMissingUser", signed(func(h map[string]string) { delete(h, skills.HeaderUserID) }), testKey, testNow, skills.ErrIdentityMissing},
		{"ErrExpired", signed(nil), testKey, testNow.Add(6 * time.Minute), skills.ErrIdentityExpired},
		{"ErrFuture", signed(nil), testKey, testNow.Add(-6 * time.Minute), skills.ErrIdentityExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/x", nil)
			for k, v := range tc.headers {
				r.Header.Set(k, v)
			}
			got, err := skills.VerifyIdentity(r, tc.key, tc.now, 0)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr != nil && err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && got != id {
				t.Errorf("identity = %+v, want %+v", got, id)
			}
		})
	}
}
