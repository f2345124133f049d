package aibot_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

// WeCom takes the bot over as it does when another client subscribes it:
// a disconnected_event with no user, then the socket closed. Hermes stands
// back instead of subscribing again.
func TestBotWS_TakenOverByAnotherClient(t *testing.T) {
	w := startWSBot(t, wsOpts{})
	w.subscribed(t, 1)
	if err := w.srv.TakeOver(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.done:
		w.done <- err // for Cleanup
		if !errors.Is(err, channels.ErrTakenOver) {
			t.Fatalf("Run = %v, want ErrTakenOver", err)
		}
	case <-waitCtx(t).Done():
		t.Fatalf("Run did not end on disconnected_event; logs:\n%s", w.logs)
	}
	if n := len(w.srv.Subscriptions()); n != 1 {
		t.Fatalf("%d subscriptions, want 1: Hermes subscribed again against the takeover", n)
	}
}

// An event that names no user (feedback on an answer, say) is neither
// stored nor taken for a broken frame; the connection carries on.
func TestBotWS_AnonymousEventIgnored(t *testing.T) {
	w := startWSBot(t, wsOpts{})
	w.subscribed(t, 1)
	anon := wecomtest.BotMessage{MsgID: "ev-anon", AIBotID: wsBotID, CreateTime: botT0.Unix()}
	if _, err := w.srv.PushEvent(waitCtx(t), anon.Event("feedback_event")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.srv.PushMessage(waitCtx(t), msg("w-next").Text("hi")); err != nil {
		t.Fatal(err)
	}
	if in := nextStarted(t, w.sink); in.MsgID != "w-next" {
		t.Fatalf("accepted %+v first, want the message after the event", in)
	}
	if logs := w.logs.String(); strings.Contains(logs, "undecodable") {
		t.Fatalf("the event was taken for a broken frame:\n%s", logs)
	}
}

// A stream refresh belongs to callback mode; on the long connection it
// names no sender and no message, and never reaches the sink (found by
// FuzzBotFrame).
func TestBotWS_StreamRefreshRefused(t *testing.T) {
	w := startWSBot(t, wsOpts{})
	w.subscribed(t, 1)
	if _, err := w.srv.PushMessage(waitCtx(t), msg("w-r").StreamRefresh("w-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.srv.PushMessage(waitCtx(t), msg("w-next").Text("hi")); err != nil {
		t.Fatal(err)
	}
	if in := nextStarted(t, w.sink); in.MsgID != "w-next" {
		t.Fatalf("accepted %+v first, want the message after the refresh", in)
	}
	w.waitLogged(t, "undecodable")
}

// A frame that makes the code reading it panic costs that connection only:
// the process lives on, the panic is counted and logged once, and the bot
// subscribes again with its backoff, ready for the next message.
func TestBotWS_PanicReconnects(t *testing.T) {
	for _, stage := range []string{"read", "handle"} {
		t.Run(stage, func(t *testing.T) {
			aibot.SetPanicHook(t, func(at string, body []byte) {
				if at == stage && bytes.Contains(body, []byte("boom")) {
					panic("hostile frame")
				}
			})
			w := startWSBot(t, wsOpts{})
			first := w.subscribed(t, 1)
			if _, err := w.srv.PushMessage(waitCtx(t), msg("w-boom").Text("boom")); err != nil {
				t.Fatal(err)
			}
			subs := w.subscribed(t, 2)
			if subs[1].Conn == first[0].Conn {
				t.Fatalf("subscribed again on the same connection: %+v", subs)
			}
			if n := w.panics.Load(); n != 1 {
				t.Fatalf("Env.Panicked called %d times, want 1", n)
			}
			if _, err := w.srv.PushMessage(waitCtx(t), msg("w-after").Text("hi")); err != nil {
				t.Fatal(err)
			}
			select {
			case in := <-w.sink.Started():
				if in.MsgID != "w-after" {
					t.Fatalf("accepted %+v, want w-after", in)
				}
			case <-waitCtx(t).Done():
				t.Fatal("the new connection never delivered a message")
			}
			logs := w.logs.String()
			if strings.Count(logs, "recovered a panic") != 1 || !strings.Contains(logs, "hostile frame") {
				t.Fatalf("want the panic logged once, with its value:\n%s", logs)
			}
		})
	}
}
