package feishu_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

func newStreamRig(t *testing.T, deadline string) (*eventRig, *feishu.App) {
	t.Helper()
	r := newEventRig(t, "    streaming: true\n    stream_deadline: "+deadline+"\n")
	app, _ := r.ch.App(testAccount)
	app.SetStreamPoll(time.Millisecond) // read progress far faster than a card may be updated
	return r, app
}

func TestStreamingCard(t *testing.T) {
	r, app := newStreamRig(t, "1m")
	const final = "你还有 **5 天**年假。"
	const drafts = 15
	r.sink.Script(func(n int) channels.Progress {
		if n > drafts {
			return channels.Progress{Known: true, Text: final, Done: true}
		}
		return channels.Progress{Known: true, Text: strings.Repeat("字", n)} // new text at every read
	})
	r.acceptOne(t, message("om_s", "p2p", "年假"))
	app.WaitStreams()

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
	if shown := r.sink.ShownRefs(); len(shown) != 1 || shown[0].MsgID != "om_s" {
		t.Fatalf("shown %+v", shown)
	}
}

// A repeated delivery of the same event opens no second card.
func TestStreamOpensOncePerMessage(t *testing.T) {
	r, app := newStreamRig(t, "1m")
	r.sink.Script(func(int) channels.Progress { return channels.Progress{Known: true, Text: "好", Done: true} })
	m := message("om_once", "p2p", "hi")
	r.acceptOne(t, m)
	r.post(t, feishutest.EventJSON(m))
	app.WaitStreams()
	if n := len(r.api.Cards()); n != 1 {
		t.Fatalf("%d cards", n)
	}
}

func TestStreamFallsBackToPlainMessage(t *testing.T) {
	r, app := newStreamRig(t, "1m")
	r.api.FailCards(true)
	r.sink.Script(func(n int) channels.Progress {
		if n < 3 {
			return channels.Progress{Known: true, Text: "草稿"}
		}
		return channels.Progress{Known: true, Text: "答案", Done: true}
	})
	r.acceptOne(t, message("om_fb", "p2p", "hi"))
	app.WaitStreams()
	got := r.api.Delivered()
	if len(got) != 1 || got[0].MsgType != "post" || got[0].Text() != "答案" {
		t.Fatalf("replies %+v", got)
	}
	if shown := r.sink.ShownRefs(); len(shown) != 1 {
		t.Fatalf("shown %+v", shown)
	}
}

func TestStreamStopsAtDeadlineWithoutShown(t *testing.T) {
	r, app := newStreamRig(t, "300ms")
	r.sink.Script(func(int) channels.Progress { return channels.Progress{Known: true, Text: "半截答案"} })
	r.acceptOne(t, message("om_dl", "p2p", "hi"))
	app.WaitStreams()
	if shown := r.sink.ShownRefs(); len(shown) != 0 {
		t.Fatal("a stream cut at its deadline marked the answer shown")
	}
	ops := r.api.Cards()[0].Ops
	last, end := ops[len(ops)-2], ops[len(ops)-1]
	if last.Content != "半截答案\n\n（回复较长，完整内容稍后单独发送）" || end.Kind != "settings" {
		t.Fatalf("ops %+v", ops)
	}
}
