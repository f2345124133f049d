package wecom

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
)

// sharedTokens gives silenceper its cache over the replicas' shared one: a
// miss is nil (silenceper fetches and Sets), a stored token is read back,
// and Delete drops only the token this replica used, never the fresh one
// another replica stored after WeCom refused the old one.
func TestSharedTokens(t *testing.T) {
	shared := chantest.NewTokenCache()
	a, b := newSharedTokens(t.Context(), shared), newSharedTokens(t.Context(), shared)
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

// blockingTokens answers nothing until its caller's ctx ends.
type blockingTokens struct{}

func (blockingTokens) Token(ctx context.Context, _ string, _ func(context.Context) (string, time.Duration, error)) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

func (blockingTokens) Invalidate(ctx context.Context, _, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// silenceper passes no context: a cache call it makes ends with the
// channel's lifetime (Build's ctx), not after tokenCallTimeout.
func TestSharedTokensEndWithTheChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		life, stop := context.WithCancel(t.Context())
		c := newSharedTokens(life, blockingTokens{})
		done := make(chan any)
		go func() { done <- c.Get("k") }()
		synctest.Wait()
		stop()
		start := time.Now()
		if got := <-done; got != nil {
			t.Fatalf("Get = %#v, want a miss", got)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("Get returned %s after the channel's end, want at once", waited)
		}
	})
}
