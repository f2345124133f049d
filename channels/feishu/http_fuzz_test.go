package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// fuzzSink accepts everything and keeps the last Inbound.
type fuzzSink struct {
	accepted []channels.Inbound
}

func (s *fuzzSink) Accept(_ context.Context, in channels.Inbound) (channels.Receipt, error) {
	s.accepted = append(s.accepted, in)
	return channels.Receipt{New: true, Answer: true}, nil
}
func (s *fuzzSink) Progress(context.Context, channels.MessageRef) (channels.Progress, error) {
	return channels.Progress{}, nil
}
func (s *fuzzSink) Shown(context.Context, channels.MessageRef) error { return nil }
func (s *fuzzSink) Refused(context.Context, string, string, string)  {}

// FuzzEventBody posts any body to the event route, signed with the app's
// Encrypt Key so that it reaches decryption and decoding: as it is (mode
// 0), as the plaintext of an encrypted envelope (1, as Feishu sends
// events), or as the envelope's "encrypt" string (2). No panic; the answer
// is 200 or a refusal; an accepted message is sane: its ids present, its
// text within maxPayloadBytes (mentions cannot multiply it), its record no
// larger than what was posted.
func FuzzEventBody(f *testing.F) {
	const key = "test key"
	now := time.Unix(1_700_000_000, 0)
	a := newApp(AppSection{
		Name: "bot", Mode: ModeHTTP, AppID: "cli_app", VerificationToken: "vt", EncryptKey: key, IDType: IDTypeOpenID,
	}, DefaultTimestampWindow, nil, channels.Env{Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	a.bot.openID = "ou_bot" // known: mentions need no OpenAPI call
	crypto := NewCrypto(key)

	event := func(content string, mentions string) string {
		return `{"schema":"2.0","header":{"event_id":"e","event_type":"im.message.receive_v1","token":"vt","app_id":"cli_app","tenant_key":"t"},` +
			`"event":{"sender":{"sender_id":{"open_id":"ou_1","user_id":"u1"},"sender_type":"user"},` +
			`"message":{"message_id":"om_1","chat_id":"oc_1","chat_type":"group","message_type":"text","content":` + strconv.Quote(content) +
			`,"mentions":` + mentions + `}}}`
	}
	f.Add(byte(1), []byte(event(`{"text":"@_user_1 你好"}`, `[{"key":"@_user_1","id":{"open_id":"ou_bot"},"name":"Hermes"}]`)))
	f.Add(byte(1), []byte(event(`{"title":"t","content":[[{"tag":"text","text":"a"},{"tag":"at","user_id":"@_user_1"}]]}`, `[]`)))
	f.Add(byte(1), []byte(`{"type":"url_verification","challenge":"c","token":"vt"}`))
	f.Add(byte(0), []byte(`{"type":"url_verification","challenge":"c","token":"vt"}`))
	f.Add(byte(0), []byte(`{"encrypt":"P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="}`))
	f.Add(byte(2), []byte("P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="))
	f.Add(byte(1), []byte(`{"schema":"2.0","header":{"event_type":"im.message.receive_v1","token":"vt"},"event":{"message":null}}`))
	fuzzEventBodyFn := func(t *testing.T, mode byte, data []byte) {
		body := data
		switch mode % 3 {
		case 1:
			enc, err := crypto.encryptIV(data, [16]byte{}) // a fixed IV: the same input, the same run
			if err != nil {
				t.Fatal(err)
			}
			body, _ = json.Marshal(map[string]string{"encrypt": enc})
		case 2:
			body, _ = json.Marshal(map[string]string{"encrypt": string(data)})
		}
		ts, nonce := strconv.FormatInt(now.Unix(), 10), "n"
		r := httptest.NewRequest(http.MethodPost, "/feishu/bot/events", bytes.NewReader(body))
		r.Header.Set(HeaderTimestamp, ts)
		r.Header.Set(HeaderNonce, nonce)
		r.Header.Set(HeaderSignature, crypto.Signature(ts, nonce, body))
		w := httptest.NewRecorder()
		sink := &fuzzSink{}
		a.serveEvents(w, r, sink)

		switch w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusUnauthorized:
		default:
			t.Fatalf("status %d for %q", w.Code, body)
		}
		if len(sink.accepted) > 1 || (len(sink.accepted) == 1 && w.Code != http.StatusOK) {
			t.Fatalf("%d accepted, answered %d", len(sink.accepted), w.Code)
		}
		for _, in := range sink.accepted {
			if in.Channel != ChannelName || in.Account != "bot" || in.MsgID == "" || in.ChatID == "" || in.Sender.UserID == "" ||
				(in.ChatType != channels.ChatSingle && in.ChatType != channels.ChatGroup) {
				t.Fatalf("accepted %+v", in)
			}
			if len(in.Text) > maxPayloadBytes || len(in.Raw) > len(data) || !json.Valid(in.ReplyTo) {
				t.Fatalf("accepted text of %d bytes, raw %d, from %d: %+v", len(in.Text), len(in.Raw), len(data), in)
			}
		}
	}
	f.Fuzz(fuzzEventBodyFn)
}
