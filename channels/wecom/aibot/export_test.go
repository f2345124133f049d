package aibot

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// SetBotTiming shortens a bot's long-connection intervals for tests:
// heartbeat, ack timeout, progress polling and the reconnect backoff table.
func SetBotTiming(b *Bot, ping, ackTimeout, poll time.Duration, backoff ...time.Duration) {
	b.timing.Ping, b.timing.AckTimeout, b.timing.Poll = ping, ackTimeout, poll
	if len(backoff) > 0 {
		// Any session of a test is short: none counts as stable, so the
		// steps are walked as after failures in a row.
		b.timing.Backoff = channels.Backoff{Steps: backoff, Stable: time.Hour}
	}
}

// SetPanicHook has every bot call hook on each callback frame, on the read
// loop (stage "read") and in the frame's handler ("handle"), until the test
// ends: a hook that panics plays a frame that drives the code into a state
// it does not handle.
func SetPanicHook(t testing.TB, hook func(stage string, body []byte)) {
	panicHook.Store(&hook)
	t.Cleanup(func() { panicHook.Store(nil) })
}

// DecodeBotFrame does with one long-connection frame what the read loop
// and the frame's handler do before the sink: decode the frame, recognise
// a takeover, decode the message and build the Inbound the sink would get.
// handled is false for an ack, a frame that is no callback, and an event
// that names no user. Errors: channels.ErrTakenOver, or ones wrapping
// wxbiz.ErrMalformed.
func DecodeBotFrame(b *Bot, data []byte) (in channels.Inbound, handled bool, err error) {
	f, err := decodeFrame(data)
	if err != nil || f.Cmd == "" {
		return in, false, err
	}
	m, err := route(f)
	if err != nil || m == nil || m.anonymous() {
		return in, false, err
	}
	in, err = b.inbound(m, f.Body, f.Headers.ReqID)
	return in, err == nil, err
}

// SetFetchTiming shortens a bot's bounds on a response_url POST and on a
// media download, rebuilding its clients.
func SetFetchTiming(b *Bot, responseURL, media time.Duration) {
	b.timing.ResponseURL, b.timing.Media = responseURL, media
	b.setFetch(b.fetch)
}

// FetchClients are the clients a bot uses for response_url POSTs and for
// media downloads.
func FetchClients(b *Bot) (responseURL, media *http.Client) { return b.respClient, b.mediaClient }

// DecodeTap does with a decrypted callback body, or a long-connection
// event's body, what the bot does before the sink with a tap on a card:
// decode it and build the click's Inbound. handled is false for anything
// that is no tap on a Hermes button. Errors wrap wxbiz.ErrMalformed.
func DecodeTap(b *Bot, plain []byte, reqID string) (in channels.Inbound, handled bool, err error) {
	m, err := parseBotMessage(plain)
	if err != nil || !m.isClick() {
		return in, false, err
	}
	return b.tapInbound(m, plain, reqID)
}

// TapAnswer is the JSON a tap the sink took as ans is answered with (a
// passive reply's plaintext, an aibot_respond_update_msg body), nil for
// no answer.
func TapAnswer(ans *channels.CardAnswer) []byte {
	u := answerOf(ans)
	if u == nil {
		return nil
	}
	b, err := json.Marshal(u)
	if err != nil {
		panic(err)
	}
	return b
}

// CardJSON is card as the template card the bot sends or redraws.
func CardJSON(card channels.Card) []byte {
	b, err := json.Marshal(cardOf(card))
	if err != nil {
		panic(err)
	}
	return b
}
