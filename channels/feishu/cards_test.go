package feishu_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// cardRig is a real gateway serving one Feishu app with the card tests'
// skills and model (gatewaytest.CardSkills, CardModel).
type cardRig struct {
	*e2e
	skills *gatewaytest.CardSkills
}

func newCardRig(t *testing.T, mode string) *cardRig {
	t.Helper()
	return newCardRigWith(t, mode, "")
}

// newCardRigWith is newCardRig with extra keys of the app's section.
func newCardRigWith(t *testing.T, mode, extra string) *cardRig {
	t.Helper()
	r := &cardRig{skills: gatewaytest.NewCardSkills(t)}
	r.e2e = newE2EWith(t, mode, extra, gateway.Deps{SkillsFS: r.skills.FS})
	r.model.SetHandler(gatewaytest.CardModel)
	return r
}

// ask has zhangsan ask in chat; it returns the card Hermes sent.
func (r *cardRig) ask(t *testing.T, id, chatType string) (feishutest.Reply, string) {
	t.Helper()
	m := message(id, chatType, "帮我重置 VPN 密码")
	if chatType == "group" {
		m = message(id, chatType, "@_user_1 帮我重置 VPN 密码", feishutest.Mention{Key: "@_user_1", OpenID: r.api.BotOpenID, Name: "Hermes"})
	}
	if status := r.post(t, feishutest.EventJSON(m)); status != 200 {
		t.Fatalf("ask: status %d", status)
	}
	r.waitIdle(t)
	for _, rep := range r.api.Delivered() {
		if card := feishutest.ParseCard(rep.Content); rep.To == id && rep.MsgType == "interactive" && card.Title != "" {
			// (a streaming card is interactive too, sent by its card_id)
			if len(card.Buttons) != 2 || card.Buttons[0].Label != "确认" || card.Buttons[1].Label != "取消" || !card.Multi {
				t.Fatalf("card %+v: want 确认 and 取消, update_multi", card)
			}
			return rep, card.Buttons[0].Value["c"].(string)
		}
	}
	t.Fatalf("no card in %+v", r.api.Delivered())
	return feishutest.Reply{}, ""
}

// tap posts a tap by openID on the card's action, signed as Feishu signs
// callbacks; it returns the HTTP status and the answer.
func (r *cardRig) tap(t *testing.T, eventID, openID, cardID, action string) (int, cardAnswer) {
	t.Helper()
	return r.tapAt(t, r.url, eventID, openID, cardID, action)
}

// tapAt is tap posted to the event URL of one replica.
func (r *cardRig) tapAt(t *testing.T, url, eventID, openID, cardID, action string) (int, cardAnswer) {
	t.Helper()
	plain := feishutest.CardActionJSON(feishutest.CardAction{
		EventID: eventID, OpenID: openID, Token: testToken, AppID: testAppID, TenantKey: testTenant,
		Value: map[string]string{"c": cardID, "a": action}, ChatID: testChatP2P,
	})
	hdr, body := feishutest.EncryptedRequest(r.crypto, plain, time.Now().Add(time.Duration(r.offset.Load())))
	status, resp, err := feishutest.Post(http.DefaultClient, url, hdr, body)
	if err != nil {
		t.Error(err)
	}
	var ans cardAnswer
	_ = json.Unmarshal([]byte(resp), &ans)
	return status, ans
}

// cardAnswer is Feishu's reading of a callback's answer.
type cardAnswer struct {
	Toast *struct {
		Type, Content string
	} `json:"toast"`
	Card *struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	} `json:"card"`
}

func (a cardAnswer) title() string {
	if a.Card == nil {
		return ""
	}
	return feishutest.ParseCard(string(a.Card.Data)).Title
}

// patched waits until every job ran and returns the last view of the
// card sent as msgID, and when Feishu took that update.
func (r *cardRig) patched(t *testing.T, msgID string) feishutest.CardView {
	t.Helper()
	v, _ := r.patchedAt(t, msgID)
	return v
}

func (r *cardRig) patchedAt(t *testing.T, msgID string) (feishutest.CardView, time.Time) {
	t.Helper()
	r.waitIdle(t)
	var last *feishutest.Patch
	for _, p := range r.api.Patches() {
		if p.MessageID == msgID {
			last = &p
		}
	}
	if last == nil {
		t.Fatalf("card %s never updated (patches %+v)", msgID, r.api.Patches())
	}
	return feishutest.ParseCard(last.Content), last.At
}

// TestCardTapRunsOnceAndShowsOutcome: the asker's tap runs the skill once
// and the card shows 已确认 with the result for everyone; another group
// member's tap changes nothing (a toast only); a double tap, Feishu's
// redelivery of the tap and a tap racing itself run nothing more.
func TestCardTapRunsOnceAndShowsOutcome(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	card, id := r.ask(t, "om_ask1", "group")
	inbound := r.count(t, `SELECT count(*) FROM inbound_messages`)

	status, ans := r.tap(t, "ev-other", "ou_lisi", id, "ok")
	if status != 200 || ans.Card != nil || ans.Toast == nil || ans.Toast.Content != "只有发起人可以操作" {
		t.Fatalf("another member's tap: %d %+v, want a toast only", status, ans)
	}
	r.waitIdle(t)
	if r.skills.Calls() != 0 || r.count(t, `SELECT count(*) FROM inbound_messages`) != inbound {
		t.Fatalf("another member's tap ran %d calls or stored a message", r.skills.Calls())
	}

	start := time.Now()
	status, ans = r.tap(t, "ev-tap1", testUserOpen, id, "ok")
	ack := time.Since(start)
	if status != 200 || ans.title() != "已确认 · 执行中" {
		t.Fatalf("asker's tap: %d %+v", status, ans)
	}
	// Redelivered (same event id), double tapped (new event id) and tapped
	// at once from two places: answered as settled, nothing runs again.
	var wg sync.WaitGroup
	for i, ev := range []string{"ev-tap1", "ev-tap2", "ev-tap3", "ev-tap3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, ans := r.tap(t, ev, testUserOpen, id, "ok"); status != 200 || ans.title() != "已处理" {
				t.Errorf("repeat %d: %d %+v, want the settled card", i, status, ans)
			}
		}()
	}
	wg.Wait()
	view, at := r.patchedAt(t, card.MessageID)
	updated := at.Sub(start)
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("the skill ran %d times, want once", n)
	}
	if view.Title != "已确认" || !strings.Contains(view.Text, "VPN 密码已重置") || len(view.Buttons) != 0 {
		t.Fatalf("updated card %+v: want 已确认, the result, no buttons", view)
	}
	t.Logf("click-to-ack %v, click-to-updated-card %v (fakes, HTTP)", ack, updated)
}

// TestCardTapExpired: a tap after agent.confirm_timeout says 已过期 and
// runs nothing; the card shows 已过期 for everyone.
func TestCardTapExpired(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	card, id := r.ask(t, "om_ask2", "p2p")
	r.offset.Store(int64(6 * time.Minute))
	status, ans := r.tap(t, "ev-late", testUserOpen, id, "ok")
	if status != 200 || ans.title() != "已过期" {
		t.Fatalf("late tap: %d %+v", status, ans)
	}
	if view := r.patched(t, card.MessageID); view.Title != "已过期" || len(view.Buttons) != 0 {
		t.Fatalf("card %+v", view)
	}
	if n := r.skills.Calls(); n != 0 {
		t.Fatalf("an expired tap ran the skill %d times", n)
	}
}

// TestCardTapAndTypedConfirmRunOnce: a tap and a typed 「确认」 sent at the
// same time run the skill once.
func TestCardTapAndTypedConfirmRunOnce(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	_, id := r.ask(t, "om_ask3", "p2p")
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.tap(t, "ev-race", testUserOpen, id, "ok") }()
	go func() { defer wg.Done(); r.post(t, feishutest.EventJSON(message("om_typed", "p2p", "确认"))) }()
	wg.Wait()
	r.waitIdle(t)
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("tap + typed 确认 ran the skill %d times, want once", n)
	}
}

// TestCardTapForgedRefused: a tap with a forged signature, or one whose
// signed timestamp is outside the window (a replay), is refused and
// stores nothing.
func TestCardTapForgedRefused(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	_, id := r.ask(t, "om_ask4", "p2p")
	plain := feishutest.CardActionJSON(feishutest.CardAction{
		EventID: "ev-forged", OpenID: testUserOpen, Token: testToken, AppID: testAppID, TenantKey: testTenant,
		Value: map[string]string{"c": id, "a": "ok"},
	})
	hdr, body := feishutest.EncryptedRequest(r.crypto, plain, time.Now())
	hdr.Set(feishu.HeaderSignature, strings.Repeat("b", 64))
	if status, _, _ := feishutest.Post(http.DefaultClient, r.url, hdr, body); status != http.StatusUnauthorized {
		t.Fatalf("forged tap: status %d", status)
	}
	hdr, body = feishutest.EncryptedRequest(r.crypto, plain, time.Now().Add(-time.Hour))
	if status, _, _ := feishutest.Post(http.DefaultClient, r.url, hdr, body); status != http.StatusUnauthorized {
		t.Fatalf("replayed tap: status %d", status)
	}
	r.waitIdle(t)
	if n := r.count(t, `SELECT count(*) FROM cards WHERE state <> 'pending'`); n != 0 || r.skills.Calls() != 0 {
		t.Fatalf("a refused tap changed %d cards, ran %d calls", n, r.skills.Calls())
	}
}

// TestCardFallsBackToText: where Feishu refuses the card (a missing
// scope), the confirmation goes as text, and typing 确认 runs it.
func TestCardFallsBackToText(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	r.api.FailInteractive(feishutest.CodeNoScope)
	if status := r.post(t, feishutest.EventJSON(message("om_ask5", "p2p", "帮我重置 VPN 密码"))); status != 200 {
		t.Fatalf("status %d", status)
	}
	r.waitIdle(t)
	got := r.api.Delivered()
	if len(got) != 1 || got[0].MsgType != "post" || !strings.Contains(got[0].Text(), "重置你的 VPN 密码") {
		t.Fatalf("replies %+v: want the text confirmation", got)
	}
	r.post(t, feishutest.EventJSON(message("om_yes5", "p2p", "确认")))
	r.waitIdle(t)
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("typed 确认 after the fallback ran %d calls", n)
	}
	if n := len(r.api.Patches()); n != 0 {
		t.Fatalf("%d patches of a card never sent", n)
	}
}

// TestCardTapOverLongConnection: a tap arrives as a card.action.trigger
// event frame; the ack carries the card's new state (base64 data), the
// skill runs once, the card is updated.
func TestCardTapOverLongConnection(t *testing.T) {
	r := newCardRig(t, feishu.ModeWebSocket)
	ctx := withTimeout(t, 20*time.Second)
	if err := r.api.WaitFor(ctx, func() bool { return r.api.Connections() == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := r.api.PushEvent(ctx, "frame-ask", feishutest.EventJSON(message("om_ws_ask", "p2p", "帮我重置 VPN 密码")), 1); err != nil {
		t.Fatal(err)
	}
	r.waitForAcks(t, 1)
	r.waitIdle(t)
	card, view := r.lastCard()
	if len(view.Buttons) != 2 {
		t.Fatalf("card %+v", card)
	}
	id := view.Buttons[0].Value["c"].(string)
	tap := feishutest.CardActionJSON(feishutest.CardAction{ // no user_id over the long connection
		EventID: "ev-ws-tap", OpenID: testUserOpen, AppID: testAppID, TenantKey: testTenant,
		Value: map[string]string{"c": id, "a": "ok"}, MessageID: card.MessageID, ChatID: testChatP2P,
	})
	start := time.Now()
	for i := range 2 { // Feishu delivers it again: one run
		if err := r.api.PushEvent(ctx, fmt.Sprintf("frame-tap-%d", i), tap, 1); err != nil {
			t.Fatal(err)
		}
		r.waitForAcks(t, 2+i)
	}
	ack := time.Since(start)
	acks := r.api.Acks()
	var first cardAnswer
	if err := json.Unmarshal(acks[1].Data, &first); err != nil || acks[1].Code != 200 || first.title() != "已确认 · 执行中" {
		t.Fatalf("tap ack %+v (%s): %v", acks[1], acks[1].Data, err)
	}
	v, at := r.patchedAt(t, card.MessageID)
	if v.Title != "已确认" || r.skills.Calls() != 1 {
		t.Fatalf("card %+v after %d calls", v, r.skills.Calls())
	}
	t.Logf("click-to-ack %v (two taps), click-to-updated-card %v (fakes, long connection)", ack, at.Sub(start))
}

// lastCard is the last card Hermes sent, and what it shows.
func (r *cardRig) lastCard() (feishutest.Reply, feishutest.CardView) {
	var card feishutest.Reply
	for _, rep := range r.api.Delivered() {
		if rep.MsgType == "interactive" {
			card = rep
		}
	}
	return card, feishutest.ParseCard(card.Content)
}

func (r *cardRig) waitForAcks(t *testing.T, n int) {
	t.Helper()
	if err := r.api.WaitFor(withTimeout(t, 20*time.Second), func() bool { return len(r.api.Acks()) >= n }); err != nil {
		t.Fatal(err)
	}
}

// TestChoiceCardTapContinuesTheRun: a backend's question with options is
// asked with one button per option; the asker's tap continues the run as
// if the option had been typed, and the card shows the choice.
func TestChoiceCardTapContinuesTheRun(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	if status := r.post(t, feishutest.EventJSON(message("om_pick", "p2p", "帮我关闭工单"))); status != 200 {
		t.Fatalf("status %d", status)
	}
	r.waitIdle(t)
	card, view := r.lastCard()
	if len(view.Buttons) != 2 || view.Buttons[1].Label != "T-1002 打印机卡纸" || !strings.Contains(view.Text, "哪一张工单") {
		t.Fatalf("choice card %+v", view)
	}
	id := view.Buttons[1].Value["c"].(string)
	status, ans := r.tap(t, "ev-pick", testUserOpen, id, view.Buttons[1].Value["a"].(string))
	if status != 200 || ans.title() != "已选择：T-1002 打印机卡纸" {
		t.Fatalf("tap: %d %+v", status, ans)
	}
	if v := r.patched(t, card.MessageID); v.Title != "已选择：T-1002 打印机卡纸" || len(v.Buttons) != 0 {
		t.Fatalf("updated card %+v", v)
	}
	var answered bool
	for _, rep := range r.api.Delivered() {
		answered = answered || rep.Text() == "已选：T-1002 打印机卡纸"
	}
	if !answered {
		t.Fatalf("the run did not continue with the option: %+v", r.api.Delivered())
	}
}

// TestCardSameTapAtTwoReplicas: the same tap delivered to two replicas at
// once (Feishu's redelivery reaching another one, a double tap split
// between them) runs the skill once; one of them answers it as taken.
func TestCardSameTapAtTwoReplicas(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	card, id := r.ask(t, "om_ask6", "p2p")
	_, second := r.replica(t)
	titles := make([]string, 4)
	var wg sync.WaitGroup
	for i := range titles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := r.url
			if i%2 == 1 {
				url = second
			}
			_, ans := r.tapAt(t, url, fmt.Sprintf("ev-rep-%d", i/2), testUserOpen, id, "ok")
			titles[i] = ans.title()
		}()
	}
	wg.Wait()
	taken := 0
	for _, title := range titles {
		if title == "已确认 · 执行中" {
			taken++
		}
	}
	if v := r.patched(t, card.MessageID); taken != 1 || r.skills.Calls() != 1 || v.Title != "已确认" {
		t.Fatalf("answers %q, %d calls, card %+v: want one tap taken, one run", titles, r.skills.Calls(), v)
	}
}

// TestCardTypedAnswerSettlesCard: typing 「确认」 runs the call and shows
// the outcome on the card; a tap after it runs nothing more. Asking
// something else cancels the question, and its card shows 已取消; a tap
// on it then runs nothing.
func TestCardTypedAnswerSettlesCard(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	card, id := r.ask(t, "om_ask7", "p2p")
	r.post(t, feishutest.EventJSON(message("om_yes7", "p2p", "确认")))
	if v := r.patched(t, card.MessageID); v.Title != "已确认" || !strings.Contains(v.Text, "VPN 密码已重置") {
		t.Fatalf("card after typed 确认: %+v", v)
	}
	if _, ans := r.tap(t, "ev-after", testUserOpen, id, "ok"); ans.title() != "已处理" || r.skills.Calls() != 1 {
		t.Fatalf("tap after typed 确认: %+v, %d calls", ans, r.skills.Calls())
	}

	old, oldID := r.ask(t, "om_ask8", "p2p")
	_, newID := r.ask(t, "om_ask9", "p2p") // asked again: the first question is cancelled
	if v := r.patched(t, old.MessageID); v.Title != "已取消" {
		t.Fatalf("replaced card %+v: want 已取消", v)
	}
	if _, ans := r.tap(t, "ev-old", testUserOpen, oldID, "ok"); ans.title() != "已处理" || r.skills.Calls() != 1 {
		t.Fatalf("tap on the cancelled card: %+v, %d calls", ans, r.skills.Calls())
	}
	r.tap(t, "ev-new", testUserOpen, newID, "ok")
	r.waitIdle(t)
	if n := r.skills.Calls(); n != 2 {
		t.Fatalf("the current card's tap: %d calls, want 2", n)
	}
}

// TestCardTapAfterResetRunsNothing: /reset drops what the session waited
// for; a tap on the card of that question then runs nothing, tells the
// clicker the question is gone, and the card shows 已处理.
func TestCardTapAfterResetRunsNothing(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	card, id := r.ask(t, "om_ask10", "p2p")
	r.post(t, feishutest.EventJSON(message("om_reset10", "p2p", "/reset")))
	r.waitIdle(t)
	inbound := r.count(t, `SELECT count(*) FROM inbound_messages`)
	_, ans := r.tap(t, "ev-reset", testUserOpen, id, "ok")
	if ans.title() != "已处理" || ans.Toast == nil || !strings.Contains(ans.Toast.Content, "这个问题已经失效") {
		t.Fatalf("tap: %+v", ans)
	}
	if v := r.patched(t, card.MessageID); v.Title != "已处理" || r.skills.Calls() != 0 {
		t.Fatalf("card %+v after %d calls: want nothing run", v, r.skills.Calls())
	}
	if n := r.count(t, `SELECT count(*) FROM inbound_messages`); n != inbound {
		t.Fatalf("the tap stored a message (%d, was %d)", n, inbound)
	}
}

// TestCardBesideStreamedAnswer: with streaming on, the question shows in
// the streaming card as it grows, and the card with the buttons follows
// it; its tap runs the call once.
func TestCardBesideStreamedAnswer(t *testing.T) {
	r := newCardRigWith(t, feishu.ModeHTTP, "    streaming: true\n")
	card, id := r.ask(t, "om_ask11", "p2p")
	if n := len(r.api.Cards()); n != 1 {
		t.Fatalf("%d streaming cards, want the one that showed the question", n)
	}
	r.tap(t, "ev-stream", testUserOpen, id, "ok")
	if v := r.patched(t, card.MessageID); v.Title != "已确认" || r.skills.Calls() != 1 {
		t.Fatalf("card %+v after %d calls", v, r.skills.Calls())
	}
}

// TestAnswerRatedByButton: an answer goes as a card with 👍 / 👎; another
// member's tap rates nothing; the asker's tap rates that answer's run and
// the card loses its buttons for everyone; a second tap changes nothing;
// a tap after the ratings window rates nothing.
func TestAnswerRatedByButton(t *testing.T) {
	r := newCardRig(t, feishu.ModeHTTP)
	if status := r.post(t, feishutest.EventJSON(message("om_rate1", "p2p", "你好"))); status != 200 {
		t.Fatalf("status %d", status)
	}
	r.waitIdle(t)
	var answer feishutest.Reply
	var view feishutest.CardView
	for _, rep := range r.api.Delivered() {
		if v := feishutest.ParseCard(rep.Content); rep.To == "om_rate1" && rep.MsgType == "interactive" && len(v.Buttons) == 2 {
			answer, view = rep, v
		}
	}
	if view.Text != "好的。" || view.Title != "" || view.Buttons[0].Value["a"] != "up" || view.Buttons[1].Value["a"] != "down" {
		t.Fatalf("answer %+v: want the text with 👍 and 👎", answer)
	}
	id := view.Buttons[0].Value["c"].(string)
	rating := func() int {
		return r.count(t, `SELECT coalesce(sum(rating), 0) FROM run_ratings`)
	}

	if status, ans := r.tap(t, "ev-r0", "ou_lisi", id, "up"); status != 200 || ans.Card != nil || ans.Toast == nil || rating() != 0 {
		t.Fatalf("another member's tap: %d %+v, rating %d", status, ans, rating())
	}
	start := time.Now()
	status, ans := r.tap(t, "ev-r1", testUserOpen, id, "down")
	ack := time.Since(start)
	if status != 200 || ans.title() != "已评价：👎 没用" || ans.Toast == nil || !strings.HasPrefix(ans.Toast.Content, "收到") {
		t.Fatalf("asker's tap: %d %+v", status, ans)
	}
	var rated int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM run_ratings r JOIN cards c ON c.run_id = r.run_id
		WHERE r.rating = -1 AND c.id = $1`, id).Scan(&rated); err != nil || rated != 1 || rating() != -1 {
		t.Fatalf("the tap rated %d runs of the card (err %v), want its one run at -1", rated, err)
	}
	if status, ans := r.tap(t, "ev-r2", testUserOpen, id, "up"); status != 200 || ans.title() != "已评价：👎 没用" || rating() != -1 {
		t.Fatalf("second tap: %d %+v, rating %d: want it settled", status, ans, rating())
	}
	updated, at := r.patchedAt(t, answer.MessageID)
	if updated.Title != "已评价：👎 没用" || updated.Text != "好的。" || len(updated.Buttons) != 0 {
		t.Fatalf("card after the rating %+v: want the answer, rated, no buttons", updated)
	}
	t.Logf("rating click-to-ack %v, click-to-updated-card %v (fakes, HTTP)", ack, at.Sub(start))

	// A new answer, tapped after the ratings window: nothing is rated.
	r.post(t, feishutest.EventJSON(message("om_rate3", "p2p", "再问一下")))
	r.waitIdle(t)
	late := r.count(t, `SELECT count(*) FROM cards WHERE kind = 'rate'`)
	var lateID string
	if err := r.pool.QueryRow(context.Background(), `SELECT id FROM cards WHERE kind = 'rate' ORDER BY created_at DESC LIMIT 1`).Scan(&lateID); err != nil || late != 2 {
		t.Fatalf("%d rating cards (err %v), want 2", late, err)
	}
	r.offset.Store(int64(2 * time.Hour))
	if status, ans := r.tap(t, "ev-r3", testUserOpen, lateID, "up"); status != 200 || ans.Toast == nil || ans.Toast.Content != "最近没有可以评价的回答。" ||
		rating() != -1 {
		t.Fatalf("late tap: %d %+v", status, ans)
	}
}
