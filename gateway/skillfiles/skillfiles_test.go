package skillfiles_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/capability"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/skillfiles"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestMain waits, after the tests, until their databases are dropped.
func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

const callbackKey = "skillfiles-test-callback-key-0123456789"

// newFileServer is the feature's public routes over real HTTP on a fresh
// database, and a function that stores an attachment and mints its URL.
func newFileServer(t *testing.T) func(name string, data []byte) string {
	t.Helper()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	cfg := &config.Config{}
	cfg.Server.CallbackKey = callbackKey
	f := skillfiles.New()
	if err := f.Attach(gateway.Services{Config: cfg, Pool: pool, Now: func() time.Time { return now },
		Log: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	f.Routes(engine, nil)
	srv := httptest.NewServer(engine)
	t.Cleanup(srv.Close)
	n := 0
	// add stores an attachment as Fetch stores it (its type sniffed from
	// its bytes) and returns a live URL for it.
	add := func(name string, data []byte) string {
		t.Helper()
		n++
		in := channels.Inbound{Channel: "wecom", Account: "app", MsgID: fmt.Sprint(n), MsgType: channels.TypeMedia,
			ChatID: "zhangsan", ChatType: "single", Sender: channels.Identity{UserID: "zhangsan"}}
		id, _, err := store.InsertInbound(ctx, pool, in, store.InboundPending)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.SaveMedia(ctx, pool, store.MediaRow{InboundID: id, Part: 0, Kind: channels.MediaFile, Name: name,
			MIME: http.DetectContentType(data), Size: int64(len(data)), Data: data, FetchedAt: now}); err != nil {
			t.Fatal(err)
		}
		token, err := capability.New(callbackKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.InsertSkillFile(ctx, pool, capability.Hash(token), store.SkillFile{InboundID: id, Skill: "hr_form_submit",
			UserID: "zhangsan", ExpiresAt: now.Add(10 * time.Minute)}, now); err != nil {
			t.Fatal(err)
		}
		return srv.URL + "/v1/files/" + token
	}
	return add
}

// TestFilesAreNeverActiveContent: whatever an employee sent, its URL
// (on public_url, the console's origin without admin_listen) answers a
// download: attachment with a name (a safe default for a file without
// one), a passive type (HTML, SVG, XML and script bytes as
// application/octet-stream), nosniff and a sandboxing CSP.
func TestFilesAreNeverActiveContent(t *testing.T) {
	t.Parallel()
	add := newFileServer(t)
	cases := []struct {
		name, file string
		data       string
		wantType   string
		wantName   string
	}{
		{"nameless HTML", "", "<!DOCTYPE html><html><script>alert(document.cookie)</script></html>", "application/octet-stream", "attachment.bin"},
		{"HTML named .png", "photo.png", "<html><body onload=alert(1)>", "application/octet-stream", "photo.png"},
		{"SVG", "", `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>`, "application/octet-stream", "attachment.bin"},
		{"XML", "", `<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>`, "application/octet-stream", "attachment.bin"},
		{"script", "", "\x00 function f(){ alert(1) }", "application/octet-stream", "attachment.bin"},
		{"nameless text", "", "请假三天", "text/plain; charset=utf-8", "attachment.txt"},
		{"nameless PDF", "", "%PDF-1.4\n%...", "application/pdf", "attachment.pdf"},
		{"named with a newline", "报销\r\n单.pdf", "%PDF-1.4\n", "application/pdf", "报销单.pdf"},
	}
	for _, c := range cases {
		resp, err := http.Get(add(c.file, []byte(c.data)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h := resp.Header
		if resp.StatusCode != http.StatusOK || string(body) != c.data {
			t.Errorf("%s: %d, %q", c.name, resp.StatusCode, body)
			continue
		}
		if ct := h.Get("Content-Type"); ct != c.wantType {
			t.Errorf("%s: Content-Type %q, want %q", c.name, ct, c.wantType)
		}
		disp, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
		if err != nil || disp != "attachment" || params["filename"] != c.wantName {
			t.Errorf("%s: Content-Disposition %q, want attachment named %q", c.name, h.Get("Content-Disposition"), c.wantName)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("%s: X-Content-Type-Options %q, Content-Security-Policy %q; want nosniff and sandbox", c.name,
				h.Get("X-Content-Type-Options"), h.Get("Content-Security-Policy"))
		}
	}
}
