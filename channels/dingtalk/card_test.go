package dingtalk

import (
	"context"
	"encoding/json"
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

	done := make(chan struct{})
	go func() { r.streamAnswer(ctx, sink, in); close(done) }()

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
	<-done
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
	if len(sink.ShownRefs()) != 1 || len(fake.Sent()) != 0 {
		t.Errorf("shown %d times, %d messages sent", len(sink.ShownRefs()), len(fake.Sent()))
	}
}

func TestCard_CreateFailsFallsBackToMarkdown(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := cardRobot(t, fake, c, time.Minute)
	sink := chantest.NewSink()
	fake.Fail("/v1.0/card/instances/createAndDeliver", 1, 403, "Forbidden.AccessDenied.AccessTokenPermissionDenied")
	sink.SetProgress("m1", channels.Progress{Known: true, Text: "答案", Done: true})
	r.streamAnswer(withTimeout(t, 10*time.Second), sink, groupInbound(t, r, "m1"))
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].Via != "openapi" || sent[0].Text != "@lisi 答案" || len(sink.ShownRefs()) != 1 {
		t.Errorf("sent %+v, shown %d", sent, len(sink.ShownRefs()))
	}
}

func TestCard_DeadlineGivesUpWithoutShown(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := cardRobot(t, fake, c, 100*time.Millisecond)
	sink := chantest.NewSink()
	sink.SetProgress("m1", channels.Progress{Known: true, Text: "还在查"})
	r.streamAnswer(withTimeout(t, 10*time.Second), sink, groupInbound(t, r, "m1"))
	if len(sink.ShownRefs()) != 0 {
		t.Errorf("shown after the deadline")
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
