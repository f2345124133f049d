package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/ops"
)

// shortTimeouts are server timeouts short enough for a test to outlast.
var shortTimeouts = config.ServerConfig{ReadTimeout: 300 * time.Millisecond, IdleTimeout: time.Second}

// watchContexts serves next and counts the requests whose context was
// cancelled while next ran: net/http cancels it only after the handler
// returns, unless the connection failed (or a read deadline passed) first.
func watchContexts(next http.Handler, cancelled *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			cancelled.Add(1)
		}
	})
}

// TestSlowBodyIsCutAtReadTimeout: a callback whose body trickles in (the
// headers and 2 bytes of 1,000) holds its connection no longer than
// server.read_timeout: the server closes it. The client sees EOF, which
// net/http sends only after the handler returned.
func TestSlowBodyIsCutAtReadTimeout(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{})
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = ops.NewHTTPServer(shortTimeouts, "", h.Gateway.Handler())
	srv.Start()
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	began := time.Now()
	fmt.Fprintf(conn, "POST /wecom/%s/callback?msg_signature=x&timestamp=1&nonce=1 HTTP/1.1\r\nHost: hermes\r\n"+
		"Content-Type: text/xml\r\nContent-Length: 1000\r\n\r\n<x", gatewaytest.App)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // generous: the server must close first
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the connection was still open after %s (%v), read %q", time.Since(began), err, got)
	}
	t.Logf("closed after %s; answered %q", time.Since(began), firstLine(string(got)))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}

// TestLongAnswersOutlastReadTimeout: a stream and a non-streaming
// completion whose runs take longer than server.read_timeout arrive whole,
// and their requests' contexts are not cancelled while they run.
func TestLongAnswersOutlastReadTimeout(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.StartExtra(gatewaytest.OpenAIYAML, gateway.Deps{})
	var cancelled atomic.Int32
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = ops.NewHTTPServer(shortTimeouts, "", watchContexts(h.Gateway.Handler(), &cancelled))
	srv.Start()
	t.Cleanup(srv.Close)
	cfg := openai.DefaultConfig(gatewaytest.APIKeyLisi)
	cfg.BaseURL = srv.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	user := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "你好"}}
	runFor := 3 * shortTimeouts.ReadTimeout

	t.Run("Stream", func(t *testing.T) {
		pieces := []string{"第一段。", "第二段。", "第三段。", "第四段。"}
		h.Model.Script(openaitest.Reply{Content: strings.Join(pieces, ""), Chunks: pieces, ChunkInterval: runFor / 3})
		// Read as a raw HTTP client, to the response's very end: the
		// SDK stops at [DONE] and closes the connection, which would
		// cancel the context itself, racing the handler's return.
		body := `{"model":"hermes","stream":true,"messages":[{"role":"user","content":"你好"}]}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+gatewaytest.APIKeyLisi)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("stream cut after %q: %v", got, err)
		}
		var content strings.Builder
		for _, line := range strings.Split(string(got), "\n") {
			var chunk openai.ChatCompletionStreamResponse
			if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &chunk) == nil {
				for _, c := range chunk.Choices {
					content.WriteString(c.Delta.Content)
				}
			}
		}
		if content.String() != strings.Join(pieces, "") || !strings.HasSuffix(string(got), "data: [DONE]\n\n") {
			t.Errorf("streamed %q", got)
		}
	})
	t.Run("NotStreaming", func(t *testing.T) {
		h.Model.Script(openaitest.Slow("好的", runFor))
		resp, err := client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "hermes", Messages: user})
		if err != nil || resp.Choices[0].Message.Content != "好的" {
			t.Fatalf("%v %+v", err, resp)
		}
	})
	if n := cancelled.Load(); n != 0 {
		t.Errorf("%d requests had their context cancelled while they ran", n)
	}
	if n := h.Count(`SELECT count(*) FROM runs WHERE stop_reason = 'finished'`); n != 2 {
		t.Errorf("%d runs finished, want 2", n)
	}
}

// TestWriteDeadlineDoesNotOutliveItsRequest: a deadline one request set on
// its connection (a stream's last write keeps one, openaiapi/stream.go) is
// gone for the next request on that kept-alive connection, which may write
// much later. net/http clears it; this holds it to that.
func TestWriteDeadlineDoesNotOutliveItsRequest(t *testing.T) {
	t.Parallel()
	const deadline = 50 * time.Millisecond
	mux := http.NewServeMux()
	mux.HandleFunc("/first", func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(deadline))
		io.WriteString(w, "first")
	})
	mux.HandleFunc("/later", func(w http.ResponseWriter, r *http.Request) {
		<-time.After(4 * deadline) // real time must pass the first request's deadline
		io.WriteString(w, "later")
	})
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = ops.NewHTTPServer(config.ServerConfig{}, "", mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	for _, path := range []string{"/first", "/later"} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != strings.TrimPrefix(path, "/") {
			t.Fatalf("%s: %q %v", path, b, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want both requests on one", n)
	}
}

// TestServerTimeoutsConfig: the timeouts have defaults and refuse negatives,
// naming the key.
func TestServerTimeoutsConfig(t *testing.T) {
	t.Parallel()
	base := "database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"
	cfg, err := config.ParseConfig([]byte(base), gatewaytest.Env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.ReadTimeout != 10*time.Second || cfg.Server.IdleTimeout != time.Minute {
		t.Errorf("defaults: %+v", cfg.Server)
	}
	srv := ops.NewHTTPServer(cfg.Server, ":0", http.NotFoundHandler())
	if srv.ReadTimeout != 10*time.Second || srv.IdleTimeout != time.Minute || srv.WriteTimeout != 0 ||
		srv.ReadHeaderTimeout != 5*time.Second || srv.MaxHeaderBytes != 64<<10 {
		t.Errorf("server: read %s idle %s write %s header %s max header %d", srv.ReadTimeout, srv.IdleTimeout,
			srv.WriteTimeout, srv.ReadHeaderTimeout, srv.MaxHeaderBytes)
	}
	for _, key := range []string{"read_timeout", "idle_timeout"} {
		_, err := config.ParseConfig([]byte(base+"server:\n  "+key+": -1s\n"), gatewaytest.Env(nil))
		if err == nil || !strings.Contains(err.Error(), "server."+key) {
			t.Errorf("%s: -1s: err = %v", key, err)
		}
	}
}

// env is a lookupEnv over m.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
