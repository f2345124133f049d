package aibot_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

// The URLs inside an AI bot's callbacks (media, response_url) are fetched
// only from WeCom's hosts: whoever holds the bot's token and key must not
// aim Hermes at the inside.

// weComHostsOnly is the bot's default: fetch_hosts unset, no private
// addresses.
func weComHostsOnly(s *aibot.Config) { s.FetchHosts, s.FetchAllowPrivate = nil, false }

// listener is a server on 127.0.0.1 that records every connection and
// request: an internal service the callback names.
type listener struct {
	srv         *httptest.Server
	conns, hits atomic.Int32
}

func newListener(t *testing.T) *listener {
	t.Helper()
	l := &listener{}
	l.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.hits.Add(1)
		_, _ = w.Write([]byte(`{"errcode":0}`))
	}))
	l.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			l.conns.Add(1)
		}
	}
	l.srv.Start()
	t.Cleanup(l.srv.Close)
	return l
}

func (l *listener) untouched(t *testing.T) {
	t.Helper()
	if c, h := l.conns.Load(), l.hits.Load(); c != 0 || h != 0 {
		t.Fatalf("the listener on 127.0.0.1 saw %d connections and %d requests, want none", c, h)
	}
}

// TestBotMediaURLOutsideWeComIsNotFetched: a callback-mode message whose
// image URL names a listener on 127.0.0.1 is accepted, but its media is
// refused as any unusable media is (ErrMediaRefused: the user hears the
// ordinary "could not fetch" sentence), without a connection, counted
// once and logged without the URL's query.
func TestBotMediaURLOutsideWeComIsNotFetched(t *testing.T) {
	f := newCallbackBot(t, weComHostsOnly)
	inside := newListener(t)
	for i, u := range []string{
		inside.srv.URL + "/admin?sign=SECRET-QUERY",
		strings.Replace(inside.srv.URL, "http://", "https://", 1) + "/admin?sign=SECRET-QUERY",
		"https://169.254.169.254/latest/meta-data/?sign=SECRET-QUERY",
	} {
		id := "m-img-" + strconv.Itoa(i)
		if rec := f.post(t, f.single(id).Image(u)); rec.Code != http.StatusOK {
			t.Fatalf("%s: callback answered %d", u, rec.Code)
		}
		got := f.sink.Accepted()
		in := got[len(got)-1]
		if in.MsgID != id || len(in.Parts) != 1 || in.Parts[0].Media == nil {
			t.Fatalf("%s: Inbound %+v, want one image part", u, in)
		}
		_, err := f.ch.FetchMedia(context.Background(), botName, *in.Parts[0].Media, 1<<20)
		if !errors.Is(err, channels.ErrMediaRefused) || !errors.Is(err, channels.ErrFetchRefused) {
			t.Fatalf("%s: FetchMedia err %v, want ErrMediaRefused from the guard", u, err)
		}
		if strings.Contains(err.Error(), "SECRET-QUERY") {
			t.Errorf("the error carries the URL's query: %v", err)
		}
		if n := f.refused.Load(); n != int32(i+1) {
			t.Errorf("%s: Env.FetchRefused called %d times, want %d", u, n, i+1)
		}
	}
	inside.untouched(t)
	if logs := f.logs.String(); !strings.Contains(logs, "refused") || strings.Contains(logs, "SECRET-QUERY") {
		t.Errorf("logs %q: want the refusal, without the query", logs)
	}
}

// TestBotResponseURLOutsideWeComIsNotPosted: a response_url naming a
// listener on 127.0.0.1 gets no request; the send fails permanently (a
// callback-mode bot has no other way to push a later part) and is
// counted.
func TestBotResponseURLOutsideWeComIsNotPosted(t *testing.T) {
	f := newCallbackBot(t, weComHostsOnly)
	inside := newListener(t)
	m := f.single("m-1")
	m.ResponseURL = inside.srv.URL + "/console/api?response_code=SECRET"
	f.reply(t, m.Text("hi"))
	in := f.sink.Accepted()[0]
	_, err := f.ch.Send(context.Background(), channels.Outbound{Account: botName, ReplyTo: in.ReplyTo, Format: channels.FormatMarkdown, Text: "the answer", Parts: 1})
	if !errors.Is(err, channels.ErrPermanent) || !errors.Is(err, channels.ErrFetchRefused) {
		t.Fatalf("Send err %v, want a permanent refusal", err)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("the error carries the response_url's query: %v", err)
	}
	if f.refused.Load() != 1 {
		t.Errorf("Env.FetchRefused called %d times, want 1", f.refused.Load())
	}
	inside.untouched(t)
}

// TestBotMediaDownloadIsNotCutAtTheResponseURLBound: an attachment that
// trickles in for longer than a response_url POST may take is still
// downloaded (the media client has no timeout of its own; the download's
// context bounds it), and it is cut at its own bound. Timings are
// shortened: a response_url POST 100 ms, a download 2 s.
func TestBotMediaDownloadIsNotCutAtTheResponseURLBound(t *testing.T) {
	f := newCallbackBot(t)
	aibot.SetFetchTiming(f.bot, 100*time.Millisecond, 2*time.Second)
	if resp, media := aibot.FetchClients(f.bot); resp.Timeout != 100*time.Millisecond || media.Timeout != 0 {
		t.Fatalf("client timeouts: response_url %s, media %s; want 100ms and none", resp.Timeout, media.Timeout)
	}
	key := bytes.Repeat([]byte{0x42}, 32)
	plain := bytes.Repeat([]byte("工资条"), 1000)
	body := wecomtest.EncryptBotFile(key, plain)
	slow := func(pieces int, gap time.Duration) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			step := (len(body) + pieces - 1) / pieces
			for i := 0; i < len(body); i += step {
				if _, err := w.Write(body[i:min(i+step, len(body))]); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select { // a slow link, not a synchronisation
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/file"
	}
	ref := func(u string) channels.MediaRef {
		r, _ := json.Marshal(map[string]string{"url": u, "aeskey": base64.StdEncoding.EncodeToString(key)})
		return channels.MediaRef{Kind: channels.MediaFile, Ref: r}
	}
	// 3 pieces 150 ms apart: 300-450 ms, past the response_url bound.
	att, err := f.ch.FetchMedia(context.Background(), botName, ref(slow(3, 150*time.Millisecond)), 1<<20)
	if err != nil || !bytes.Equal(att.Data, plain) {
		t.Fatalf("a download longer than the response_url bound: %d bytes, %v", len(att.Data), err)
	}
	// 10 pieces 400 ms apart: 3.6 s, past the download's own bound.
	if _, err := f.ch.FetchMedia(context.Background(), botName, ref(slow(10, 400*time.Millisecond)), 1<<20); err == nil {
		t.Fatal("a download past the media bound succeeded")
	}
}
