package aibot

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// VerifyURL answers the GET URL verification of a callback-mode bot
// (WeCom wants the bare plaintext within 1 s). q is the decoded query.
//
// Errors wrap wxbiz.ErrSignature, wxbiz.ErrStale or wxbiz.ErrDecrypt.
func (b *Bot) VerifyURL(q url.Values) ([]byte, error) {
	plain, err := wxbiz.VerifyEcho(b.crypto, q, b.now(), b.window)
	if err != nil {
		return nil, fmt.Errorf("wecom: bot %q: verify URL: %w", b.name, err)
	}
	return plain, nil
}

// botEnvelope is the POST body of an AI bot callback.
type botEnvelope struct {
	Encrypt string `json:"encrypt"`
}

// passiveReply is the encrypted answer to a callback. Note WeCom's names:
// msgsignature without underscore, an integer timestamp, the callback's
// nonce.
type passiveReply struct {
	Encrypt      string `json:"encrypt"`
	MsgSignature string `json:"msgsignature"`
	Timestamp    int64  `json:"timestamp"`
	Nonce        string `json:"nonce"`
}

// serveCallback verifies and decrypts a callback, then answers it: a
// message is stored (sink.Accept) before anything is answered; a stream
// refresh is answered from the run's progress; a tap on a card is taken
// by the sink (durably, once) and answered with the card redrawn
// (update_template_card, cardevent.go), or with nothing.
func (b *Bot) serveCallback(w http.ResponseWriter, r *http.Request, sink channels.Sink) {
	q := r.URL.Query()
	m, plain, err := b.openCallback(r, q)
	if err != nil {
		wxbiz.Refuse(w, r, b.log, sink, b.name, "wecom bot callback", err)
		return
	}
	var reply any // nil: an empty 200
	switch {
	case m.MsgType == botTypeStream:
		reply, err = b.refresh(r.Context(), sink, m)
	case m.isClick():
		var u *cardUpdate
		if u, err = b.acceptClick(r.Context(), sink, m, plain, ""); u != nil {
			reply = u
		}
	default:
		var rp *botReply
		if rp, err = b.acceptCallback(r.Context(), sink, m, plain); rp != nil {
			reply = rp
		}
	}
	if err != nil {
		wxbiz.Refuse(w, r, b.log, sink, b.name, "wecom bot callback", fmt.Errorf("wecom: bot %q: %w", b.name, err))
		return
	}
	if reply == nil {
		w.WriteHeader(http.StatusOK) // empty body: no passive reply
		return
	}
	body, err := b.seal(reply, q.Get("nonce"))
	if err != nil {
		wxbiz.Refuse(w, r, b.log, sink, b.name, "wecom bot callback", err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(body)
}

// openCallback reads, verifies and decrypts a callback POST. Errors wrap
// wxbiz.ErrMalformed, wxbiz.ErrSignature, wxbiz.ErrStale or wxbiz.ErrDecrypt.
func (b *Bot) openCallback(r *http.Request, q url.Values) (*botMessage, []byte, error) {
	fail := func(err error) (*botMessage, []byte, error) {
		return nil, nil, fmt.Errorf("wecom: bot %q: callback: %w", b.name, err)
	}
	body, err := wxbiz.ReadBody(r)
	if err != nil {
		return fail(err)
	}
	var env botEnvelope
	if err := json.Unmarshal(body, &env); err != nil || env.Encrypt == "" {
		return fail(fmt.Errorf("%w: envelope is not {\"encrypt\":...}", wxbiz.ErrMalformed))
	}
	if err := wxbiz.CheckQuery(b.crypto, q, env.Encrypt, b.now(), b.window); err != nil {
		return fail(err)
	}
	plain, err := b.crypto.Decrypt(env.Encrypt)
	if err != nil {
		return fail(err)
	}
	m, err := parseBotMessage(plain)
	if err != nil {
		return fail(err)
	}
	return m, plain, nil
}

// acceptCallback stores a message and returns the passive reply: the
// welcome, the opened stream, or nil for an empty 200.
func (b *Bot) acceptCallback(ctx context.Context, sink channels.Sink, m *botMessage, plain []byte) (*botReply, error) {
	in, answer, err := b.accept(ctx, sink, m, plain, "")
	if err != nil {
		return nil, err
	}
	switch answer {
	case answerWelcome:
		reply := textReply(b.msgs.Welcome)
		return &reply, nil
	case answerStream:
		reply := streamReply(b.openStream(in))
		return &reply, nil
	}
	return nil, nil
}

// refresh answers a stream refresh with the run's progress. The stream id
// is the message's msgid, so no state is kept between refreshes.
//
// When the stream finishes with the final first part, Shown is recorded
// before answering: should the answer be lost, WeCom refreshes again and
// gets the same text, whereas a Shown lost after the answer would send the
// part twice. If Shown fails, the stream stays open for the next refresh.
func (b *Bot) refresh(ctx context.Context, sink channels.Sink, m *botMessage) (*botReply, error) {
	ref := channels.MessageRef{Channel: wxbiz.ChannelName, Account: b.name, MsgID: m.Stream.ID}
	p, err := sink.Progress(ctx, ref)
	if err != nil {
		return nil, unavailable("stream progress", err)
	}
	chatType := channels.ChatSingle
	if m.ChatType == channels.ChatGroup {
		chatType = channels.ChatGroup
	}
	st := b.step(ref.MsgID, p, chatType, m.From.UserID, b.now())
	if st.shown {
		if err := sink.Shown(ctx, ref); err != nil {
			b.log.Warn("wecom bot: record stream shown; keeping the stream open", "msg_id", ref.MsgID, "err", err)
			st.stream.Finish = false
		}
	}
	reply := streamReply(st.stream)
	return &reply, nil
}

// seal encrypts a passive reply (a botReply, or a cardUpdate) for the
// callback whose nonce it echoes.
func (b *Bot) seal(reply any, nonce string) ([]byte, error) {
	plain, err := json.Marshal(reply)
	if err != nil {
		return nil, fmt.Errorf("wecom: bot %q: passive reply: %w", b.name, err)
	}
	enc, err := b.crypto.Encrypt(plain, nil)
	if err != nil {
		return nil, fmt.Errorf("wecom: bot %q: passive reply: %w", b.name, err)
	}
	ts := b.now().Unix()
	return json.Marshal(passiveReply{
		Encrypt:      enc,
		MsgSignature: b.crypto.Signature(strconv.FormatInt(ts, 10), nonce, enc),
		Timestamp:    ts,
		Nonce:        nonce,
	})
}
