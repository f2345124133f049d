package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServeAdminListener: `hermes serve` with server.admin_listen opens
// both listeners, serves the console, /metrics and the status page only on
// the admin one, and shuts both down on the signal: first /readyz answers
// 503 on a listener still open (server.drain_delay), then both close.
func TestServeAdminListener(t *testing.T) {
	t.Parallel()
	public, admin := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, "server:\n  listen: "+public+"\n  admin_listen: "+admin+"\n  drain_delay: 2s\n"+
		"database:\n  url: "+storetest.URL(t)+"\nmodel:\n  provider: offline\n")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	}()

	// Wait for the public listener (the gateway migrates first).
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get("http://" + public + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve ended with %d before listening:\n%s", code, errb.String())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen on %s: %v", public, err)
		}
	}
	status := func(u string) int {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/", "/console/login", "/metrics"} {
		if got := status("http://" + public + path); got != http.StatusNotFound {
			t.Errorf("public %s: %d, want 404", path, got)
		}
		if got := status("http://" + admin + path); got != http.StatusOK {
			t.Errorf("admin %s: %d, want 200", path, got)
		}
	}
	if got := status("http://" + public + "/readyz"); got != http.StatusOK {
		t.Errorf("public /readyz: %d, want 200", got)
	}

	stop()
	// Draining: the listener still answers, and /readyz says 503.
	for {
		resp, err := http.Get("http://" + public + "/readyz")
		if err != nil {
			t.Fatalf("/readyz while draining: %v (the listener closed before the drain delay)", err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		<-tick.C
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve after the signal: exit %d\n%s", code, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop")
	}
	for _, addr := range []string{public, admin} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after serve returned", addr)
		}
	}
}

// TestServeRefusesAnAddressInUse: a listener that cannot be bound stops
// `hermes serve` with a non-zero exit naming its key, instead of a replica
// that serves the public listener without its admin one.
func TestServeRefusesAnAddressInUse(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	public := freeAddr(t)
	cfg := writeConfig(t, "server:\n  listen: "+public+"\n  admin_listen: "+taken.Addr().String()+"\n"+
		"database:\n  url: "+storetest.URL(t)+"\nmodel:\n  provider: offline\n")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"serve", "--config", cfg}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code == 0 || !strings.Contains(errb.String(), "server.admin_listen") || !strings.Contains(errb.String(), "address already in use") {
		t.Fatalf("serve with admin_listen in use: exit %d, stderr:\n%s", code, errb.String())
	}
	if c, err := net.Dial("tcp", public); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after serve returned", public)
	}
}
