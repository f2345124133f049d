package wecom_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/channels"
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
	if in := <-w.sink.started; in.MsgID != "w-next" {
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
	if in := <-w.sink.started; in.MsgID != "w-next" {
		t.Fatalf("accepted %+v first, want the message after the refresh", in)
	}
	w.waitLogged(t, "undecodable")
}
