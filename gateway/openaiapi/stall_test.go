package openaiapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/ops"
)

// stallYAML configures lisi's and wangwu's keys with a write timeout.
func stallYAML(writeTimeout time.Duration) string {
	return `
openai_api:
  write_timeout: ` + writeTimeout.String() + `
  keys:
    - key: ` + gatewaytest.APIKeyLisi + `
      user_id: lisi
      name: open-webui
      corp_id: ` + gatewaytest.CorpID + `
    - key: ` + gatewaytest.APIKeyOnly + `
      user_id: wangwu
`
}

// smallSendBuffers shrinks the send buffer of every accepted connection, so
// that a client that stops reading blocks the server's writes after tens
// of KiB instead of the MiBs the kernel would otherwise buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// serveReal serves the harness's gateway as `hermes serve` does
// (NewHTTPServer) on a listener with small send buffers.
func serveReal(t *testing.T, h *gatewaytest.Harness, server config.ServerConfig) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Config = ops.NewHTTPServer(server, "", h.Gateway.Handler())
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// stallingClient sends a streaming completion over a raw TCP connection
// with a small receive buffer, and never reads.
func stallingClient(t *testing.T, addr, key, user string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(openai.ChatCompletionRequest{Model: "hermes", User: user, Stream: true,
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: user}}})
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: hermes\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body)
	return conn
}

// longAnswer is n pieces of about 1 KiB.
func longAnswer(n int) []string {
	pieces := make([]string, n)
	for i := range pieces {
		pieces[i] = fmt.Sprintf("第%d段：", i) + strings.Repeat("年假余额按入职年限计算。", 30)
	}
	return pieces
}

// TestStalledStreamDoesNotStallOthers: with one model slot, a streaming
// client that never reads holds neither the slot nor anyone else: another
// key's request and a WeCom user's message are answered while it stalls.
// The stalled client is dropped (its connection cut before [DONE]) once
// its backlog overflows or a write misses its deadline, and its run is
// recorded in full, as if it had read along.
//
// Like every harness test it runs alone: the harness sets the skills'
// base URL in the environment, and WeCom's API base URL is process-wide.
func TestStalledStreamDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		writeTimeout time.Duration
		answer       openaitest.Reply
		dropped      string // why, in the log
	}{
		// 512 KiB at once: more than a stream's backlog holds, long before
		// a write could miss its deadline.
		{"Backlog", time.Minute, openaitest.Reply{Chunks: longAnswer(512)}, "behind the stream"},
		// 100 KiB over 2 s: within the backlog, but a write waits past
		// write_timeout once the socket's buffers are full.
		{"Deadline", 300 * time.Millisecond, openaitest.Reply{Chunks: longAnswer(100), ChunkInterval: 20 * time.Millisecond}, "i/o timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stall(t, tc.writeTimeout, tc.answer, tc.dropped)
		})
	}
}

// stall runs one stalled client against a gateway with one model slot.
func stall(t *testing.T, writeTimeout time.Duration, answer openaitest.Reply, dropped string) {
	const stalled = "stalled"
	h := gatewaytest.New(t)
	h.ModelYAML = "  max_concurrent: 1\n"
	answer.Content = strings.Join(answer.Chunks, "")
	started := make(chan struct{}, 1)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		if req.Messages[len(req.Messages)-1].Content != stalled {
			return openaitest.Reply{Content: "好的"}
		}
		r := answer
		r.Hook = func(context.Context) error { started <- struct{}{}; return nil }
		return r
	})
	var logs chantest.LogBuffer
	h.StartExtra(stallYAML(writeTimeout), gateway.Deps{Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logs, t.Output()), nil))})
	srv := serveReal(t, h, config.ServerConfig{})
	ctx := gatewaytest.WithTimeout(t, 90*time.Second)
	cfg := openai.DefaultConfig(gatewaytest.APIKeyOnly)
	cfg.BaseURL = srv.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)

	conn := stallingClient(t, srv.Listener.Addr().String(), gatewaytest.APIKeyLisi, stalled)
	select {
	case <-started: // the stalled run holds the model's only slot now
	case <-ctx.Done():
		t.Fatal("the stalled request never reached the model")
	}

	// Another key, then a WeCom user: both need the slot.
	reqCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := client.CreateChatCompletion(reqCtx, openai.ChatCompletionRequest{Model: "hermes",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "你好"}}})
	if err != nil || resp.Choices[0].Message.Content != "好的" {
		t.Fatalf("another key while a stream stalls: %v %+v", err, resp)
	}
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "你好", "stall-1"), time.Now())
	gatewaytest.Post(t, u, body)
	if _, err := h.WeComAPI.WaitMessages(reqCtx, 1); err != nil {
		t.Fatalf("a WeCom user while a stream stalls: %v", err)
	}

	// The stalled client was dropped: its connection ends, without [DONE].
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the stalled connection was not closed: %v after %d bytes", err, len(got))
	}
	if strings.Contains(string(got), "[DONE]") {
		t.Errorf("a dropped client got the whole stream (%d bytes)", len(got))
	}
	// The connection is cut at the drop; the run goes on, and its handler
	// logs why the client was dropped only once the run is recorded.
	if text := waitLines(ctx, &logs, "stream client dropped"); !strings.Contains(text, dropped) {
		t.Errorf("want the client dropped for %q, logged:\n%s", dropped, text)
	}
	chat := "api:open-webui:lisi:" + stalled
	if n := h.Count(`SELECT count(*) FROM runs r JOIN sessions s ON s.id = r.session_id
		JOIN inbound_messages m ON m.id = r.inbound_id
		WHERE s.chat_id = $1 AND r.stop_reason = 'finished' AND r.reply = $2 AND m.status = 'done'`, chat, answer.Content); n != 1 {
		t.Errorf("the stalled run is not recorded finished with its %d-byte reply", len(answer.Content))
	}
	if n := h.Count(`SELECT count(*) FROM messages g JOIN sessions s ON s.id = g.session_id
		WHERE s.chat_id = $1 AND g.role = 'assistant' AND g.content = $2`, chat, answer.Content); n != 1 {
		t.Errorf("the stalled run's answer is not in the session's history")
	}
}

// waitLines waits until logs hold a line that contains s, or ctx ends,
// and returns those lines.
func waitLines(ctx context.Context, logs *chantest.LogBuffer, s string) string {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		text := grepLines(logs.String(), s)
		if text != "" {
			return text
		}
		select {
		case <-ctx.Done():
			return text
		case <-tick.C:
		}
	}
}

// grepLines are the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
