package wecom

import (
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
)

// sharedTokens gives silenceper its cache over the replicas' shared one: a
// miss is nil (silenceper fetches and Sets), a stored token is read back,
// and Delete drops only the token this replica used, never the fresh one
// another replica stored after WeCom refused the old one.
func TestSharedTokens(t *testing.T) {
	shared := chantest.NewTokenCache()
	a, b := newSharedTokens(shared), newSharedTokens(shared)
	const key = "gowechat_work__access_token_ww1_1"
	if got := a.Get(key); got != nil {
		t.Fatalf("Get on an empty cache = %#v, want nil", got)
	}
	if a.IsExist(key) {
		t.Fatal("IsExist on an empty cache")
	}
	if err := a.Set(key, "tok1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := b.Get(key); got != "tok1" {
		t.Fatalf("the other replica read %#v, want tok1", got)
	}
	// WeCom refuses tok1: b drops it and fetches tok2, then a, refused
	// with tok1 too, drops what it used.
	if err := b.Delete(key); err != nil {
		t.Fatal(err)
	}
	if got := b.Get(key); got != nil {
		t.Fatalf("after Delete, Get = %#v, want a miss", got)
	}
	if err := b.Set(key, "tok2", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(key); err != nil {
		t.Fatal(err)
	}
	if got := a.Get(key); got != "tok2" {
		t.Fatalf("after a stale Delete, Get = %#v, want the fresh tok2 kept", got)
	}
	for _, bad := range []any{"", 42, nil, []byte("tok")} {
		if err := a.Set(key, bad, time.Hour); err == nil {
			t.Errorf("Set(%#v) accepted", bad)
		}
	}
}
