package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// cardRobot is a robot with an AI card template and a fast card interval.
func cardRobot(t *testing.T, fake *dingtalktest.Server, c *clock, deadline time.Duration) *robot {
	return testRobot(t, fake, c, nil, func(s *RobotSection) {
		s.CardTemplateID, s.CardInterval, s.StreamDeadline = "tpl.schema", 5*time.Millisecond, deadline
	})
}

// runCard runs the live reply to in as the gateway does once Accept
// returned: channels.RunLive with r's AI card, reading progress from src,
// on clock c.
func runCard(ctx context.Context, r *robot, c *clock, in channels.Inbound, src channels.ProgressSource) (bool, error) {
	return channels.RunLive(ctx, channels.LiveRun{
		Replier: &Channel{robots: map[string]*robot{r.cfg.Name: r}},
		Open: channels.Outbound{Account: r.cfg.Name, ReplyTo: in.ReplyTo, Format: channels.FormatMarkdown,
			Text: "思考中…", Parts: 1, Answer: true},
		Progress: src, Received: c.Now(), Later: "（稍后发送）", Now: c.Now,
	})
}

// progressOf reads in's progress from sink, as the gateway reads Postgres.
func progressOf(sink *chantest.Sink, in channels.Inbound) channels.ProgressFunc {
	ref := channels.MessageRef{Channel: ChannelName, Account: in.Account, MsgID: in.MsgID}
	return func(ctx context.Context) (channels.Progress, error) { return sink.Progress(ctx, ref) }
}

// groupInbound decodes a group message to r, as the callback would.
func groupInbound(t *testing.T, r *robot, msgID string) channels.Inbound {
	m := dingtalktest.Message{MsgID: msgID, Text: "查年假", Group: true, InAtList: true, ConversationID: "cid-g", StaffID: "lisi", CorpID: testCorpID}
	in, ok, err := r.decodeMessage(m.JSON())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	return in
}

func TestCard_StreamsThenShown(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := cardRobot(t, fake, c, time.Minute)
	sink := chantest.NewSink()
	ctx := withTimeout(t, 10*time.Second)
	in := groupInbound(t, r, "m1")
	sink.SetProgress("m1", channels.Progress{Known: true})

	type end struct {
		shown bool
		err   error
	}
	done := make(chan end, 1)
	go func() { shown, err := runCard(ctx, r, c, in, progressOf(sink, in)); done <- end{shown, err} }()

	lastStream := func(cards []dingtalktest.CardCall) dingtalktest.CardCall {
		for i := len(cards) - 1; i >= 0; i-- {
			if cards[i].Op == "stream" {
				return cards[i]
			}
		}
		return dingtalktest.CardCall{}
	}
	for _, draft := range []string{"您的年假", "您的年假还有"} {
		sink.SetProgress("m1", channels.Progress{Known: true, Text: draft})
		if err := fake.Wait(ctx, func(_ []dingtalktest.Sent, cards []dingtalktest.CardCall) bool {
			return lastStream(cards).Content == draft
		}); err != nil {
			t.Fatal(err)
		}
	}
	sink.SetProgress("m1", channels.Progress{Known: true, Text: "您的年假还有 5 天。", Done: true})
	res := <-done
	cards := fake.Cards()
	if cards[0].Op != "create" || cards[0].OpenSpaceID != "dtv1.card//IM_GROUP.cid-g" || cards[0].Content != "思考中…" {
		t.Errorf("create: %+v", cards[0])
	}
	last := cards[len(cards)-1]
	if !last.Finalize || last.Content != "您的年假还有 5 天。" {
		t.Errorf("last update: %+v", last)
	}
	for _, cc := range cards[1 : len(cards)-1] {
		if cc.Finalize {
			t.Errorf("finalized early: %+v", cc)
		}
	}
	var rt replyTo
	_ = json.Unmarshal(in.ReplyTo, &rt)
	if cards[0].OutTrackID != rt.Card {
		t.Errorf("card %q, reply address names %q", cards[0].OutTrackID, rt.Card)
	}
	if !res.shown || res.err != nil || len(fake.Sent()) != 0 {
		t.Errorf("shown %v (%v), %d messages sent", res.shown, res.err, len(fake.Sent()))
	}
}

func TestCard_CreateFailsFallsBackToMarkdown(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := cardRobot(t, fake, c, time.Minute)
	sink := chantest.NewSink()
	fake.Fail("/v1.0/card/instances/createAndDeliver", 1, 403, "Forbidden.AccessDenied.AccessTokenPermissionDenied")
	sink.SetProgress("m1", channels.Progress{Known: true, Text: "答案", Done: true})
	ctx := withTimeout(t, 10*time.Second)
	in := groupInbound(t, r, "m1")
	shown, err := runCard(ctx, r, c, in, progressOf(sink, in))
	if shown || err == nil {
		t.Fatalf("live reply shown %v (%v), want it ended: the delivery layer sends the answer", shown, err)
	}
	// The delivery layer then sends the first part as a markdown message.
	if _, err := r.send(ctx, channels.Outbound{Account: r.cfg.Name, ReplyTo: in.ReplyTo, Format: channels.FormatMarkdown,
		Text: "答案", Parts: 1, Answer: true}); err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].Via != "openapi" || sent[0].Text != "@lisi 答案" {
		t.Errorf("sent %+v", sent)
	}
}

func TestCard_DeadlineGivesUpWithoutShown(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := cardRobot(t, fake, c, 100*time.Millisecond)
	sink := chantest.NewSink()
	sink.SetProgress("m1", channels.Progress{Known: true, Text: "还在查"})
	in := groupInbound(t, r, "m1")
	reads := 0
	src := channels.ProgressFunc(func(ctx context.Context) (channels.Progress, error) {
		if reads++; reads == 3 {
			c.Add(time.Minute) // past the 100 ms deadline
		}
		return sink.Progress(ctx, channels.MessageRef{MsgID: "m1"})
	})
	if shown, err := runCard(withTimeout(t, 10*time.Second), r, c, in, src); shown || !errors.Is(err, channels.ErrLiveDeadline) {
		t.Errorf("shown %v (%v) after the deadline", shown, err)
	}
	cards := fake.Cards()
	if last := cards[len(cards)-1]; !last.Finalize || last.Content != "还在查\n\n（稍后发送）" {
		t.Errorf("card not closed with the later note: %+v", last)
	}
}

func TestCard_NotStartedForRepeatsOrIgnored(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := cardRobot(t, fake, c, time.Minute)
	sink := chantest.NewSink()
	m := dingtalktest.Message{MsgID: "m", Text: "大家好", Group: true, ConversationID: "cid", StaffID: "u", CorpID: testCorpID}
	if err := r.receive(context.Background(), m.JSON(), proof{}, sink); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Cards()); n != 0 {
		t.Errorf("%d card calls for a message not to be answered", n)
	}
}
