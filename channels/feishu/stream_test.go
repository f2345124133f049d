package feishu_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/feishu"
)

func newStreamRig(t *testing.T, deadline string) (*eventRig, *feishu.App) {
	t.Helper()
	r := newEventRig(t, "    streaming: true\n    stream_deadline: "+deadline+"\n")
	app, _ := r.ch.App(testAccount)
	app.SetStreamPoll(time.Millisecond) // read progress far faster than a card may be updated
	return r, app
}

// runStream runs the live reply to in as the gateway does once Accept
// returned: channels.RunLive with the app's streaming card, reading the
// sink's scripted progress, until it ends.
func runStream(t *testing.T, r *eventRig, in channels.Inbound) (bool, error) {
	t.Helper()
	ref := channels.MessageRef{Channel: feishu.ChannelName, Account: in.Account, MsgID: in.MsgID}
	return channels.RunLive(withTimeout(t, 10*time.Second), channels.LiveRun{
		Replier: r.ch,
		Open: channels.Outbound{Account: in.Account, ReplyTo: in.ReplyTo, Format: channels.FormatMarkdown,
			Text: "思考中…", Parts: 1, Answer: true, Key: "inbound:" + in.MsgID + "/0"},
		Progress: channels.ProgressFunc(func(ctx context.Context) (channels.Progress, error) { return r.sink.Progress(ctx, ref) }),
		Received: time.Now(), Later: "（回复较长，完整内容稍后单独发送）",
	})
}

func TestStreamingCard(t *testing.T) {
	r, _ := newStreamRig(t, "1m")
	const final = "你还有 **5 天**年假。"
	const drafts = 15
	r.sink.Script(func(n int) channels.Progress {
		if n > drafts {
			return channels.Progress{Known: true, Text: final, Done: true}
		}
		return channels.Progress{Known: true, Text: strings.Repeat("字", n)} // new text at every read
	})
	in := r.acceptOne(t, message("om_s", "p2p", "年假"))
	shown, err := runStream(t, r, in)

	cards := r.api.Cards()
	if len(cards) != 1 || !strings.Contains(cards[0].Data, `"streaming_mode":true`) {
		t.Fatalf("cards %+v", cards)
	}
	replies := r.api.Delivered()
	if len(replies) != 1 || replies[0].MsgType != "interactive" || replies[0].Text() != "card:"+cards[0].ID || replies[0].To != "om_s" {
		t.Fatalf("replies %+v", replies)
	}
	ops := cards[0].Ops
	if len(ops) < 3 {
		t.Fatalf("only %d card operations", len(ops))
	}
	for i := 1; i < len(ops); i++ {
		if ops[i].Sequence <= ops[i-1].Sequence {
			t.Fatalf("sequence %d after %d", ops[i].Sequence, ops[i-1].Sequence)
		}
	}
	// Never CardUpdatesPerSecond updates within one second.
	for i := range ops {
		j := i + feishu.CardUpdatesPerSecond - 1
		if j < len(ops) && ops[j].At.Sub(ops[i].At) < time.Second {
			t.Fatalf("%d updates within %s", feishu.CardUpdatesPerSecond, ops[j].At.Sub(ops[i].At))
		}
	}
	last, end := ops[len(ops)-2], ops[len(ops)-1]
	if last.Kind != "content" || last.Content != final {
		t.Fatalf("last content %+v", last)
	}
	if end.Kind != "settings" || !strings.Contains(end.Content, `"streaming_mode":false`) {
		t.Fatalf("streaming not turned off: %+v", end)
	}
	if !shown || err != nil {
		t.Fatalf("shown %v (%v), want the answer shown in the card", shown, err)
	}
}

// No card: the live reply ends at once, and the delivery layer sends the
// first part as a message when it is there. (A repeated delivery opens no
// second card: TestEndToEndStreamOpensOncePerMessage.)
func TestStreamFallsBackToPlainMessage(t *testing.T) {
	r, _ := newStreamRig(t, "1m")
	r.api.FailCards(true)
	in := r.acceptOne(t, message("om_fb", "p2p", "hi"))
	if shown, err := runStream(t, r, in); shown || err == nil {
		t.Fatalf("shown %v (%v), want the live reply ended", shown, err)
	}
	if _, err := r.ch.Send(withTimeout(t, 10*time.Second), part(in, "答案", 0, 1)); err != nil {
		t.Fatal(err)
	}
	got := r.api.Delivered()
	if len(got) != 1 || got[0].MsgType != "post" || got[0].Text() != "答案" {
		t.Fatalf("replies %+v", got)
	}
}

func TestStreamStopsAtDeadlineWithoutShown(t *testing.T) {
	r, _ := newStreamRig(t, "300ms")
	r.sink.Script(func(int) channels.Progress { return channels.Progress{Known: true, Text: "半截答案"} })
	in := r.acceptOne(t, message("om_dl", "p2p", "hi"))
	if shown, err := runStream(t, r, in); shown || !errors.Is(err, channels.ErrLiveDeadline) {
		t.Fatalf("shown %v (%v): a stream cut at its deadline marked the answer shown", shown, err)
	}
	ops := r.api.Cards()[0].Ops
	last, end := ops[len(ops)-2], ops[len(ops)-1]
	if last.Content != "半截答案\n\n（回复较长，完整内容稍后单独发送）" || end.Kind != "settings" {
		t.Fatalf("ops %+v", ops)
	}
}
