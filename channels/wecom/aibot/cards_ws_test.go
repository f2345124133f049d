package aibot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// sayWS pushes the asker's text as a message frame and waits for its
// stream to finish and every job to run.
func (r *cardRig) sayWS(t *testing.T, msgID, text string, group bool) {
	t.Helper()
	ctx := gatewaytest.WithTimeout(t, 40*time.Second)
	if group {
		text = "@Hermes " + text
	}
	// On a loaded machine the bot may give up on a subscription's ack
	// (5 s) that the fake already counted, and subscribe again: a message
	// pushed to the abandoned socket is lost, as it would be on WeCom.
	// Setup then pushes it again on the new one.
	for attempt := 1; ; attempt++ {
		subs := len(r.ws.Subscriptions())
		reqID, err := r.ws.PushMessage(ctx, r.message(msgID, asker, group).Text(text))
		if err != nil {
			t.Fatal(err)
		}
		wait, cancel := context.WithTimeout(ctx, 8*time.Second)
		_, err = r.ws.WaitFrame(wait, func(f wecomtest.BotFrame) bool {
			return f.Cmd == "aibot_respond_msg" && f.ReqID == reqID && f.Reply.Stream.Finish
		})
		cancel()
		if err == nil {
			break
		}
		if attempt == 3 || len(r.ws.Subscriptions()) == subs {
			t.Fatal(err)
		}
	}
	r.h.WaitIdle(ctx)
}

// askWS asks on the long connection and returns the card then pushed
// (aibot_send_msg) to the chat.
func (r *cardRig) askWS(t *testing.T, msgID, text string, group bool) wecomtest.TemplateCard {
	t.Helper()
	before := len(r.cardsSent())
	r.sayWS(t, msgID, text, group)
	cards := r.cardsSent()
	if len(cards) != before+1 {
		t.Fatalf("%d cards pushed after %s, want one (frames %+v)", len(cards)-before, msgID, r.ws.Frames())
	}
	return cards[len(cards)-1]
}

// cardsSent are the cards pushed with aibot_send_msg so far.
func (r *cardRig) cardsSent() []wecomtest.TemplateCard {
	var out []wecomtest.TemplateCard
	for _, f := range r.ws.Frames() {
		if f.Cmd == "aibot_send_msg" && f.Reply.MsgType == "template_card" {
			out = append(out, f.Reply.TemplateCard)
		}
	}
	return out
}

// tapWS pushes user's tap on the card's button i as an
// aibot_event_callback frame and returns its req_id.
func (r *cardRig) tapWS(t *testing.T, msgID, user string, group bool, card wecomtest.TemplateCard, i int) string {
	t.Helper()
	reqID, err := r.ws.PushEvent(gatewaytest.WithTimeout(t, 5*time.Second),
		r.message(msgID, user, group).TemplateCardEvent(card.Buttons[i].Key, card.TaskID))
	if err != nil {
		t.Fatal(err)
	}
	return reqID
}

// updateOn waits for the card update answering the event reqID.
func (r *cardRig) updateOn(t *testing.T, reqID string) wecomtest.BotFrame {
	t.Helper()
	f, err := r.ws.WaitFrame(gatewaytest.WithTimeout(t, 10*time.Second), func(f wecomtest.BotFrame) bool {
		return f.Cmd == "aibot_respond_update_msg" && f.ReqID == reqID
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// pushedText are the markdown messages pushed with aibot_send_msg.
func (r *cardRig) pushedText() []string {
	var out []string
	for _, f := range r.ws.Frames() {
		if f.Cmd == "aibot_send_msg" && f.Reply.MsgType == "markdown" {
			out = append(out, f.Reply.Markdown.Content)
		}
	}
	return out
}

// TestCardWebSocketTapRunsOnceAndShowsOutcome: on the long connection, in
// a group, the card follows the streamed question; another member's tap
// gets no frame and changes nothing; the asker's tap is answered with
// aibot_respond_update_msg on its req_id (once: WeCom refuses a second,
// 846605) and runs the skill once, whose result is pushed as a message;
// WeCom's redelivery and a double tap run nothing more.
func TestCardWebSocketTapRunsOnceAndShowsOutcome(t *testing.T) {
	t.Parallel()
	r := newCardRig(t, aibot.ModeWebSocket)
	card := r.askWS(t, "ws-ask-1", "帮我重置 VPN 密码", true)
	if card.MainTitle.Title != "请确认" || len(card.Buttons) != 2 || !strings.Contains(card.SubTitleText, "重置你的 VPN 密码") {
		t.Fatalf("card %+v", card)
	}
	inbound := r.count(`SELECT count(*) FROM inbound_messages`)
	other := r.tapWS(t, "ws-tap-other", bystander, true, card, 0)

	start := time.Now()
	first := r.tapWS(t, "ws-tap-1", asker, true, card, 0)
	f := r.updateOn(t, first)
	ack := time.Since(start)
	if f.Reply.ResponseType != "update_template_card" || f.Reply.TemplateCard.MainTitle.Title != "已确认 · 执行中" ||
		f.Reply.TemplateCard.TaskID != card.TaskID || len(f.Reply.UserIDs) != 0 {
		t.Fatalf("the asker's tap was answered %+v", f.Reply)
	}
	again := r.tapWS(t, "ws-tap-1", asker, true, card, 0) // WeCom's redelivery: a new req_id
	double := r.tapWS(t, "ws-tap-2", asker, true, card, 0)
	for _, reqID := range []string{again, double} {
		if f := r.updateOn(t, reqID); f.Reply.TemplateCard.MainTitle.Title != "已处理" {
			t.Fatalf("repeat tap answered %+v, want the settled card", f.Reply)
		}
	}
	r.h.WaitIdle(gatewaytest.WithTimeout(t, 20*time.Second))
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("the skill ran %d times, want once", n)
	}
	var results int
	for _, text := range r.pushedText() {
		if strings.Contains(text, "VPN 密码已重置") {
			results++
		}
	}
	if results != 1 {
		t.Fatalf("pushed %q, want the result once", r.pushedText())
	}
	updates := map[string]int{}
	for _, f := range r.ws.Frames() {
		if f.Cmd == "aibot_respond_update_msg" {
			updates[f.ReqID]++
		}
	}
	if updates[other] != 0 || updates[first] != 1 || len(updates) != 3 {
		t.Fatalf("updates by req_id %v: want none for the bystander, one per tap of the asker", updates)
	}
	// The bystander's tap stored nothing; the asker's stored the one message
	// it stands for.
	if n := r.count(`SELECT count(*) FROM inbound_messages`); n != inbound+1 {
		t.Fatalf("%d inbound rows, want %d", n, inbound+1)
	}
	t.Logf("click-to-updated-card %v (long connection: the update frame, sent once the tap is stored)", ack)
}

// TestCardWebSocketTapExpiredAndTyped: a tap after agent.confirm_timeout
// says 已过期 and runs nothing; on a new card, a tap and a typed 「确认」
// run the skill once.
func TestCardWebSocketTapExpiredAndTyped(t *testing.T) {
	t.Parallel()
	r := newCardRig(t, aibot.ModeWebSocket)
	card := r.askWS(t, "ws-ask-2", "帮我重置 VPN 密码", false)
	r.clock.Jump(6 * time.Minute)
	if f := r.updateOn(t, r.tapWS(t, "ws-tap-late", asker, false, card, 0)); f.Reply.TemplateCard.MainTitle.Title != "已过期" {
		t.Fatalf("late tap answered %+v", f.Reply)
	}
	r.h.WaitIdle(gatewaytest.WithTimeout(t, 20*time.Second))
	if n := r.skills.Calls(); n != 0 {
		t.Fatalf("an expired tap ran the skill %d times", n)
	}

	card = r.askWS(t, "ws-ask-3", "帮我重置 VPN 密码", false)
	r.tapWS(t, "ws-tap-race", asker, false, card, 0)
	r.sayWS(t, "ws-typed-3", "确认", false)
	r.h.WaitIdle(gatewaytest.WithTimeout(t, 20*time.Second))
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("tap + typed 确认 ran the skill %d times, want once", n)
	}
}

// TestCardWebSocketFallsBackToText: where WeCom refuses the card, the
// question is pushed as text, and typing 确认 runs it.
func TestCardWebSocketFallsBackToText(t *testing.T) {
	t.Parallel()
	r := newCardRig(t, aibot.ModeWebSocket)
	r.ws.FailNext("aibot_send_msg:template_card", wecomtest.CodeBadCard)
	r.sayWS(t, "ws-ask-4", "帮我重置 VPN 密码", false)
	if got := r.pushedText(); len(got) != 1 || !strings.Contains(got[0], "重置你的 VPN 密码") {
		t.Fatalf("pushed %q, want the text confirmation", got)
	}
	r.sayWS(t, "ws-typed-4", "确认", false)
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("typed 确认 after the fallback ran %d calls", n)
	}
}
