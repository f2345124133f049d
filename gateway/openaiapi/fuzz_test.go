package openaiapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/config"
)

// FuzzDecodeChatRequest: whatever body and X-Session-Id a client sends, the
// decoder does not panic; it refuses with a 4xx *apiError, or gives a turn
// within the configured bounds whose session chat id is the key's own.
func FuzzDecodeChatRequest(f *testing.F) {
	for _, seed := range []struct{ body, session string }{
		{`{"model":"hermes","messages":[{"role":"user","content":"我还有几天年假？"}]}`, ""},
		{`{"model":"hermes","user":"wrFinanceGroup0001","messages":[{"role":"system","content":"x"},{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`, ""},
		{`{"model":"hermes","messages":[{"role":"user","content":[{"type":"text","text":"看图"},{"type":"image_url","image_url":{"url":"data:,"}}]}]}`, "sess:1"},
		{`{"model":"hermes","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "a:b%3Ac"},
		{`{"model":"gpt-4o","messages":[]}`, ""},
		{`{"model":"hermes","messages":[{"role":"assistant","content":"hi"}]}`, ""},
		{`{"model":"hermes","messages":[{"role":"user","content":"\ud800\u0000"}]}`, strings.Repeat("x", 129)},
		{`[1,2`, ""},
		{`{"model":"hermes","messages":[{"role":"user","content":1}]}`, ""},
	} {
		f.Add([]byte(seed.body), seed.session)
	}
	cfg := config.OpenAIAPIConfig{MaxBodyBytes: 4 << 10, MaxMessages: 8}
	key := config.OpenAIKey{Key: "fuzz-key-0123456789", UserID: "lisi", Name: "open-webui"}
	prefix := "api:open-webui:lisi:"
	f.Fuzz(func(t *testing.T, body []byte, session string) {
		req, err := decodeChatRequest(strings.NewReader(string(body)), session, cfg, []string{"hermes"})
		if err != nil {
			var e *apiError
			if !errors.As(err, &e) || e.status < 400 || e.status > 499 || e.Message == "" || e.Type == "" {
				t.Fatalf("error %v (%#v) is not a 4xx OpenAI error", err, e)
			}
			return
		}
		if len(body) > cfg.MaxBodyBytes || req.Model != "hermes" || len(req.Messages) > cfg.MaxMessages ||
			len(req.history) >= cfg.MaxMessages || req.userText == "" || len(req.session) > maxSessionIDLen {
			t.Fatalf("accepted out of bounds: %d bytes, model %q, %d messages, %d history, text %q, session %d",
				len(body), req.Model, len(req.Messages), len(req.history), req.userText, len(req.session))
		}
		// JSON decoding turns a stray byte into U+FFFD (3 bytes): text is at
		// most three times the body.
		total := len(req.userText)
		for _, m := range req.history {
			total += len(m.Content)
		}
		if total > 3*len(body) {
			t.Fatalf("%d bytes of text from a %d-byte body", total, len(body))
		}
		chat := apiChatID(key, req.session)
		rest, ok := strings.CutPrefix(chat, prefix)
		if !ok || strings.Contains(rest, ":") || rest == "" {
			t.Fatalf("session %q got chat id %q, outside the key's namespace %s", req.session, chat, prefix)
		}
	})
}
