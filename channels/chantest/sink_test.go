package chantest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
)

// The sink answers as the gateway does: once per account and message id,
// events and group messages that do not mention the bot stored but not
// answered, a proof without a sender claimed and nothing stored.
func TestSinkAcceptsAsTheGateway(t *testing.T) {
	s := chantest.NewSink()
	ctx := t.Context()
	in := func(account, id, chat string, mentioned bool, typ string) channels.Inbound {
		return channels.Inbound{Account: account, MsgID: id, ChatType: chat, Mentioned: mentioned, MsgType: typ,
			Sender: channels.Identity{UserID: "zhangsan"}}
	}
	for _, tc := range []struct {
		in   channels.Inbound
		want channels.Receipt
	}{
		{in("a", "1", channels.ChatSingle, false, channels.TypeText), channels.Receipt{New: true, Answer: true}},
		{in("a", "1", channels.ChatSingle, false, channels.TypeText), channels.Receipt{Answer: true}},
		{in("b", "1", channels.ChatSingle, false, channels.TypeText), channels.Receipt{New: true, Answer: true}},
		{in("a", "2", channels.ChatGroup, false, channels.TypeText), channels.Receipt{New: true}},
		{in("a", "3", channels.ChatGroup, true, channels.TypeText), channels.Receipt{New: true, Answer: true}},
		{in("a", "4", channels.ChatSingle, false, channels.TypeEvent), channels.Receipt{New: true}},
		{channels.Inbound{Account: "a", MsgID: "5", Nonce: "sign:x"}, channels.Receipt{}},
	} {
		if got, err := s.Accept(ctx, tc.in); err != nil || got != tc.want {
			t.Errorf("Accept(%s/%s) = %+v, %v; want %+v", tc.in.Account, tc.in.MsgID, got, err, tc.want)
		}
	}
	if a, n, c := len(s.Accepted()), len(s.Answered()), s.Calls(); a != 5 || n != 3 || c != 7 {
		t.Errorf("accepted %d, answered %d, calls %d; want 5, 3, 7", a, n, c)
	}
	if got := len(s.Started()); got != 7 {
		t.Errorf("%d starts seen, want every call", got)
	}
}

func TestSinkFailsAndHolds(t *testing.T) {
	s := chantest.NewSink()
	down := errors.New("postgres down")
	s.FailWith(down)
	if _, err := s.Accept(t.Context(), channels.Inbound{MsgID: "1"}); !errors.Is(err, down) {
		t.Fatalf("Accept = %v, want the failure", err)
	}
	s.FailWith(nil)
	gate := s.Hold()
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if _, err := s.Accept(ctx, channels.Inbound{MsgID: "2"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("held Accept = %v, want its ctx's end", err)
	}
	close(gate)
	if r, err := s.Accept(t.Context(), channels.Inbound{MsgID: "2"}); err != nil || !r.New {
		t.Fatalf("released Accept = %+v, %v", r, err)
	}
}

func TestSinkProgress(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	s := chantest.NewSink().WithReceived(t0)
	ref := channels.MessageRef{Account: "a", MsgID: "1"}
	if p, _ := s.Progress(t.Context(), ref); p.Known {
		t.Fatalf("unknown message: %+v", p)
	}
	s.SetProgress("1", channels.Progress{Known: true, Text: "草稿"})
	if p, _ := s.Progress(t.Context(), ref); p.Text != "草稿" || !p.Received.Equal(t0) || p.Shown {
		t.Fatalf("progress %+v", p)
	}
	if err := s.Shown(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitShown(t.Context(), "1"); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Progress(t.Context(), ref); !p.Shown {
		t.Fatalf("after Shown: %+v", p)
	}
	s.Script(func(n int) channels.Progress { return channels.Progress{Known: true, Done: n == 4} })
	if p, _ := s.Progress(t.Context(), ref); !p.Done {
		t.Fatalf("the 4th Progress call, the script's: %+v", p)
	}
	s.Refused(t.Context(), "wecom", "a", channels.CheckSignature)
	if got := s.Refusals(); len(got) != 1 || got[0] != "a/signature" {
		t.Fatalf("refusals %v", got)
	}
}
