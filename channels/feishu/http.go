package feishu

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// maxEventBytes bounds an event body; Feishu's events are a few KiB.
const maxEventBytes = 1 << 20

// Headers Feishu signs events with.
const (
	HeaderSignature = "X-Lark-Signature"
	HeaderTimestamp = "X-Lark-Request-Timestamp"
	HeaderNonce     = "X-Lark-Request-Nonce"
)

// envelope is an event body as posted: {"encrypt": ...} when an Encrypt
// Key is set, and, once decrypted (or in plain), either a URL
// verification or a v2 event.
type envelope struct {
	Encrypt   string       `json:"encrypt"`
	Type      string       `json:"type"` // "url_verification"
	Challenge string       `json:"challenge"`
	Token     string       `json:"token"`
	Header    *eventHeader `json:"header"`
}

// serveEvents handles POST /feishu/<name>/events:
//  1. a URL verification, plain or encrypted, is answered first with
//     {"challenge"} once its token matches (Feishu sends it when the URL is
//     saved, before it signs anything);
//  2. otherwise the body must be encrypted and X-Lark-Signature must match,
//     then X-Lark-Request-Timestamp must be within the timestamp window
//     (after the signature, so that a forger cannot probe our clock); the
//     decrypted header's token must be the verification token. An event
//     without an Encrypt Key would carry neither signature nor timestamp:
//     http mode requires the key (Validate), so a plain event is refused;
//     the URL verification is the one request Feishu sends unsigned, and
//     it stores nothing;
//  3. an im.message.receive_v1 is handed to sink.Accept, and Feishu is
//     answered 200 only after it returned (the message and its job have
//     committed). Feishu gives up after 3 s and retries for hours. A
//     card.action.trigger (a tap on a card's button) goes the same way,
//     and is answered with the toast and card of Receipt.Card
//     (cardaction.go).
//
// Refusals store nothing and answer 401 or 400 (channels.Refuse); a failed
// Accept answers 503, so Feishu retries.
func (a *App) serveEvents(w http.ResponseWriter, r *http.Request, sink channels.Sink) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxEventBytes+1))
	if err != nil || len(body) > maxEventBytes {
		a.refuse(w, r, sink, fmt.Errorf("%w: body unreadable or over %d bytes", ErrMalformed, maxEventBytes))
		return
	}
	var outer envelope
	if err := json.Unmarshal(body, &outer); err != nil {
		a.refuse(w, r, sink, fmt.Errorf("%w: %v", ErrMalformed, err))
		return
	}
	plain, env := body, outer
	if outer.Encrypt != "" {
		if plain, err = a.crypto.Decrypt(outer.Encrypt); err != nil {
			a.refuse(w, r, sink, err)
			return
		}
		if err := json.Unmarshal(plain, &env); err != nil {
			a.refuse(w, r, sink, fmt.Errorf("%w: decrypted body: %v", ErrMalformed, err))
			return
		}
	}
	if env.Type == "url_verification" {
		a.answerChallenge(w, r, sink, env)
		return
	}
	if outer.Encrypt == "" {
		// The Encrypt Key is configured, so Feishu encrypts and signs every
		// event: a plain one did not come from Feishu.
		a.refuse(w, r, sink, fmt.Errorf("%w: event not encrypted", ErrSignature))
		return
	}
	ts := r.Header.Get(HeaderTimestamp)
	if !a.crypto.VerifySignature(r.Header.Get(HeaderSignature), ts, r.Header.Get(HeaderNonce), body) {
		a.refuse(w, r, sink, ErrSignature)
		return
	}
	if _, err := channels.VerifyTimestamp(ts, time.Second, a.now(), a.window, ErrStale); err != nil {
		a.refuse(w, r, sink, err)
		return
	}
	if env.Header == nil || !a.tokenMatches(env.Header.Token) {
		a.refuse(w, r, sink, ErrToken)
		return
	}
	in, ok, err := a.decodeEvent(r.Context(), plain)
	if err != nil {
		a.refuse(w, r, sink, err)
		return
	}
	if !ok {
		writeJSON(w, map[string]any{})
		return
	}
	receipt, err := sink.Accept(r.Context(), in)
	if err != nil {
		a.refuse(w, r, sink, err)
		return
	}
	if in.Click != nil {
		writeRaw(w, cardAnswer(receipt.Card))
		return
	}
	writeJSON(w, map[string]any{})
}

// answerChallenge answers a URL verification whose token is the app's.
func (a *App) answerChallenge(w http.ResponseWriter, r *http.Request, sink channels.Sink, env envelope) {
	if !a.tokenMatches(env.Token) {
		a.refuse(w, r, sink, ErrToken)
		return
	}
	a.log.Info("feishu: event URL verified")
	writeJSON(w, map[string]string{"challenge": env.Challenge})
}

// tokenMatches compares a verification token in constant time.
func (a *App) tokenMatches(token string) bool {
	want := a.cfg.VerificationToken
	return want != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v) // maps of strings always marshal
	writeRaw(w, b)
}

func writeRaw(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(b)
}

// refuse answers a refused event and, when the request failed one of the
// checks (not a failed Accept), records which one for the console.
func (a *App) refuse(w http.ResponseWriter, r *http.Request, sink channels.Sink, err error) {
	channels.RefuseRecorded(w, r, a.log, "feishu event", err, sink, ChannelName, a.cfg.Name)
}
