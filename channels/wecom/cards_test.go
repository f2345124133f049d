package wecom_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// cardRig is a real gateway (Postgres, workers, outbox) serving the test
// WeCom app against the fake WeCom, with the card tests' skills and model
// (gatewaytest.CardSkills: a reset that needs 「确认」, counting its calls,
// and a backend that asks which ticket).
type cardRig struct {
	h      *gatewaytest.Harness
	skills *gatewaytest.CardSkills
	offset atomic.Int64 // the gateway's clock runs this far ahead, ns
	cfg    *config.Config
	deps   gateway.Deps
	ct     atomic.Int64 // CreateTime of the clicks, one second apart
}

func newCardRig(t *testing.T) *cardRig {
	t.Helper()
	r := &cardRig{h: gatewaytest.New(t), skills: gatewaytest.NewCardSkills(t)}
	r.h.AppCards = true
	r.ct.Store(time.Now().Unix())
	r.h.Model.SetHandler(gatewaytest.CardModel)
	r.cfg = r.h.Config()
	r.deps = gateway.Deps{SkillsFS: r.skills.FS, Now: r.now}
	r.h.StartConfig(r.cfg, r.deps)
	return r
}

func (r *cardRig) now() time.Time { return time.Now().Add(time.Duration(r.offset.Load())) }

// say posts zhangsan's (or another user's) text message and waits until
// every job ran.
func (r *cardRig) say(t *testing.T, from, text, msgID string) {
	t.Helper()
	u, body := r.h.CallbackRequest(gatewaytest.TextXML(from, text, msgID), r.now())
	if status, _ := gatewaytest.Post(t, u, body); status != http.StatusOK {
		t.Fatalf("message %s: status %d", msgID, status)
	}
	r.waitIdle(t)
}

func (r *cardRig) waitIdle(t *testing.T) {
	t.Helper()
	r.h.WaitIdle(gatewaytest.WithTimeout(t, 30*time.Second))
}

// ask has zhangsan ask for the VPN reset; it returns the card Hermes sent.
func (r *cardRig) ask(t *testing.T, msgID string) wecomtest.SentCard {
	t.Helper()
	before := len(r.h.WeComAPI.Cards())
	r.say(t, "zhangsan", "帮我重置 VPN 密码", msgID)
	cards := r.h.WeComAPI.Cards()
	if len(cards) != before+1 {
		t.Fatalf("%d cards after asking, want %d (messages %+v)", len(cards), before+1, r.h.WeComAPI.Messages())
	}
	c := cards[len(cards)-1]
	b := c.Card.Buttons
	if c.ToUser != "zhangsan" || c.Card.CardType != "button_interaction" || c.Card.MainTitle.Title != "请确认" ||
		!strings.Contains(c.Card.SubTitleText, "重置你的 VPN 密码") || len(b) != 2 || b[0].Text != "确认" || b[1].Text != "取消" {
		t.Fatalf("card %+v: want 请确认, the prompt, 确认 and 取消", c)
	}
	return c
}

// click is a click request as WeCom sends it when from taps the button of
// card whose key ends with ":"+action: the callback URL and its body.
func (r *cardRig) click(t *testing.T, from string, card wecomtest.SentCard, action string) (string, []byte) {
	t.Helper()
	var key string
	for _, b := range card.Card.Buttons {
		if strings.HasSuffix(b.Key, ":"+action) {
			key = b.Key
		}
	}
	if key == "" {
		t.Fatalf("card %+v has no button %q", card, action)
	}
	plain := wecomtest.CardEventXML(gatewaytest.CorpID, from, key, card.Card.TaskID,
		r.h.WeComAPI.ClickCode(card.Card.TaskID), gatewaytest.AgentID, r.ct.Add(1))
	return r.h.CallbackRequest(plain, r.now())
}

// post posts a click to u and reads WeCom's view of the answer: the
// passive reply, nil for an empty 200.
func (r *cardRig) post(t *testing.T, u string, body []byte) (int, *wecomtest.PassiveReply) {
	t.Helper()
	status, resp := gatewaytest.Post(t, u, body)
	if status != http.StatusOK {
		return status, nil
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := wecomtest.OpenPassiveReply(r.h.Crypto, resp, parsed.Query())
	if err != nil {
		t.Errorf("passive reply %q: %v", resp, err)
	}
	return status, reply
}

// label is the button name a passive reply sets; "" for none.
func label(p *wecomtest.PassiveReply) string {
	if p == nil || p.MsgType != "update_button" {
		return ""
	}
	return p.Button.ReplaceName
}

// updated waits until every job ran and returns the updates of card.
func (r *cardRig) updated(t *testing.T, card wecomtest.SentCard) []wecomtest.CardUpdate {
	t.Helper()
	r.waitIdle(t)
	var out []wecomtest.CardUpdate
	for _, u := range r.h.WeComAPI.CardUpdates() {
		if u.TaskID == card.Card.TaskID {
			out = append(out, u)
		}
	}
	return out
}

// finalCard checks that card had exactly one later update, spending the
// send's response_code for everyone it went to, redrawn under title with
// no live button; it returns the card drawn.
func finalCard(t *testing.T, card wecomtest.SentCard, ups []wecomtest.CardUpdate, title string) wecomtest.TemplateCard {
	t.Helper()
	if len(ups) != 1 || ups[0].Card == nil {
		t.Fatalf("card %s: updates %+v, want one with a template card", card.Card.TaskID, ups)
	}
	u := ups[0]
	if u.ResponseCode != card.ResponseCode || u.AtAll != 1 || u.Card.MainTitle.Title != title || u.Card.ReplaceText != title {
		t.Fatalf("update %+v of %+v: want the send's code for everyone, title and replace_text %q", u, card, title)
	}
	return *u.Card
}

// TestCardClickRunsOnceAndUpdatesCard: another member's click changes
// nothing (no passive reply, nothing stored, nothing run); the asker's
// click is answered with 已确认 · 执行中, runs the skill once, and the card
// then shows 已确认 with the result for everyone; a double tap and WeCom's
// redelivery of the click, at once, run nothing more and are answered with
// the settled card.
func TestCardClickRunsOnceAndUpdatesCard(t *testing.T) {
	t.Parallel()
	r := newCardRig(t)
	card := r.ask(t, "m-ask1")
	inbound := r.h.Count(`SELECT count(*) FROM inbound_messages`)

	u, body := r.click(t, "lisi", card, "ok")
	if status, reply := r.post(t, u, body); status != http.StatusOK || reply != nil {
		t.Fatalf("another member's click: %d %+v, want an empty 200", status, reply)
	}
	r.waitIdle(t)
	if r.skills.Calls() != 0 || r.h.Count(`SELECT count(*) FROM inbound_messages`) != inbound || len(r.updated(t, card)) != 0 {
		t.Fatalf("another member's click ran %d calls, stored a message or updated the card", r.skills.Calls())
	}

	u, body = r.click(t, "zhangsan", card, "ok")
	start := time.Now()
	status, reply := r.post(t, u, body)
	ack := time.Since(start)
	if status != http.StatusOK || label(reply) != "已确认 · 执行中" || reply.ToUserName != "zhangsan" || reply.FromUserName != gatewaytest.CorpID {
		t.Fatalf("asker's click: %d %+v", status, reply)
	}
	du, dbody := r.click(t, "zhangsan", card, "ok") // a double tap: a new event
	var wg sync.WaitGroup
	for i, req := range [][2]any{{u, body}, {u, body}, {du, dbody}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, reply := r.post(t, req[0].(string), req[1].([]byte)); status != http.StatusOK || label(reply) != "已处理" {
				t.Errorf("repeat %d: %d %+v, want the settled card", i, status, reply)
			}
		}()
	}
	wg.Wait()
	ups := r.updated(t, card)
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("the skill ran %d times, want once", n)
	}
	final := finalCard(t, card, ups, "已确认")
	if !strings.Contains(final.SubTitleText, gatewaytest.CardResetSummary) {
		t.Fatalf("updated card %+v: want the result", final)
	}
	t.Logf("click-to-ack %v, click-to-updated-card %v (fake WeCom, callback)", ack, ups[0].At.Sub(start))
}

// TestCardClickExpired: a click after agent.confirm_timeout is answered
// 已过期, runs nothing, and the card shows 已过期 for everyone.
func TestCardClickExpired(t *testing.T) {
	t.Parallel()
	r := newCardRig(t)
	card := r.ask(t, "m-ask2")
	r.offset.Store(int64(6 * time.Minute))
	u, body := r.click(t, "zhangsan", card, "ok")
	if status, reply := r.post(t, u, body); status != http.StatusOK || label(reply) != "已过期" {
		t.Fatalf("late click: %d %+v", status, reply)
	}
	finalCard(t, card, r.updated(t, card), "已过期")
	if n := r.skills.Calls(); n != 0 {
		t.Fatalf("an expired click ran the skill %d times", n)
	}
}

// TestCardClickAndTypedConfirmRunOnce: a click and a typed 「确认」 at the
// same time run the skill once, and the card is updated once.
func TestCardClickAndTypedConfirmRunOnce(t *testing.T) {
	t.Parallel()
	r := newCardRig(t)
	card := r.ask(t, "m-ask3")
	u, body := r.click(t, "zhangsan", card, "ok")
	typedURL, typed := r.h.CallbackRequest(gatewaytest.TextXML("zhangsan", "确认", "m-typed3"), r.now())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.post(t, u, body) }()
	go func() { defer wg.Done(); gatewaytest.Post(t, typedURL, typed) }()
	wg.Wait()
	ups := r.updated(t, card)
	if n := r.skills.Calls(); n != 1 || len(ups) != 1 {
		t.Fatalf("click + typed 确认 ran the skill %d times, updated the card %d times; want once each", n, len(ups))
	}
}

// TestCardClickForgedOrReplayedRefused: a click with a forged signature,
// one whose signed timestamp is outside the window (a replay) and one
// naming another app are refused (401) and store nothing.
func TestCardClickForgedOrReplayedRefused(t *testing.T) {
	t.Parallel()
	r := newCardRig(t)
	card := r.ask(t, "m-ask4")
	inbound := r.h.Count(`SELECT count(*) FROM inbound_messages`)

	u, body := r.click(t, "zhangsan", card, "ok")
	forged := strings.Replace(u, "msg_signature=", "msg_signature=0", 1)
	if status, _ := gatewaytest.Post(t, forged, body); status != http.StatusUnauthorized {
		t.Fatalf("forged click: status %d", status)
	}
	key := card.Card.Buttons[0].Key
	plain := wecomtest.CardEventXML(gatewaytest.CorpID, "zhangsan", key, card.Card.TaskID, "rc", gatewaytest.AgentID, r.ct.Add(1))
	old, oldBody := r.h.CallbackRequest(plain, r.now().Add(-time.Hour))
	if status, _ := gatewaytest.Post(t, old, oldBody); status != http.StatusUnauthorized {
		t.Fatalf("replayed click: status %d", status)
	}
	other := wecomtest.CardEventXML(gatewaytest.CorpID, "zhangsan", key, card.Card.TaskID, "rc", "1000099", r.ct.Add(1))
	ou, oBody := r.h.CallbackRequest(other, r.now())
	if status, _ := gatewaytest.Post(t, ou, oBody); status != http.StatusUnauthorized {
		t.Fatalf("another app's click: status %d", status)
	}
	r.waitIdle(t)
	if n := r.h.Count(`SELECT count(*) FROM cards WHERE state <> 'pending'`); n != 0 || r.skills.Calls() != 0 ||
		r.h.Count(`SELECT count(*) FROM inbound_messages`) != inbound {
		t.Fatalf("a refused click changed %d cards, ran %d calls or stored a message", n, r.skills.Calls())
	}
}

// TestCardFallsBackToText: where WeCom refuses the card (the app may not
// send it), the confirmation goes as text, and typing 确认 runs it.
func TestCardFallsBackToText(t *testing.T) {
	t.Parallel()
	r := newCardRig(t)
	r.h.WeComAPI.RefuseCards(48002)
	r.say(t, "zhangsan", "帮我重置 VPN 密码", "m-ask5")
	msgs := r.h.WeComAPI.Messages()
	if len(msgs) != 1 || msgs[0].MsgType != "text" || !strings.Contains(msgs[0].Content, "重置你的 VPN 密码") {
		t.Fatalf("messages %+v: want the text confirmation", msgs)
	}
	r.say(t, "zhangsan", "确认", "m-yes5")
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("typed 确认 after the fallback ran %d calls", n)
	}
	if n := len(r.h.WeComAPI.CardUpdates()); n != 0 {
		t.Fatalf("%d updates of a card never sent", n)
	}
}

// TestCardSameClickAtTwoReplicas: the same click delivered to two
// replicas at once (WeCom's retry reaching another one), twice, runs the
// skill once; exactly one answer says it was taken.
func TestCardSameClickAtTwoReplicas(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	r := newCardRig(t)
	card := r.ask(t, "m-ask6")
	deps := r.deps
	deps.Pool, deps.Platforms, deps.Logger = r.h.NewPool(20), gatewaytest.Platforms, gatewaytest.Logger(t)
	ctx := context.Background()
	second, err := gateway.New(ctx, r.cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = second.Stop(stop)
	})
	srv := httptest.NewServer(second.Handler())
	t.Cleanup(srv.Close)

	u, body := r.click(t, "zhangsan", card, "ok")
	labels := make([]string, 4)
	var wg sync.WaitGroup
	for i := range labels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := u
			if i%2 == 1 {
				at = srv.URL + strings.TrimPrefix(u, r.h.Srv.URL)
			}
			_, reply := r.post(t, at, body)
			labels[i] = label(reply)
		}()
	}
	wg.Wait()
	taken := 0
	for _, l := range labels {
		if l == "已确认 · 执行中" {
			taken++
		}
	}
	finalCard(t, card, r.updated(t, card), "已确认")
	if taken != 1 || r.skills.Calls() != 1 {
		t.Fatalf("answers %q, %d calls: want one click taken, one run", labels, r.skills.Calls())
	}
}

// TestChoiceCardClickContinuesTheRun: a backend's question with options
// is asked with one button per option; the asker's click continues the
// run as if the option had been typed, and the card shows the choice.
func TestChoiceCardClickContinuesTheRun(t *testing.T) {
	t.Parallel()
	r := newCardRig(t)
	r.say(t, "zhangsan", "帮我关闭工单", "m-pick")
	cards := r.h.WeComAPI.Cards()
	if len(cards) != 1 {
		t.Fatalf("%d cards, want the choice", len(cards))
	}
	card := cards[0]
	b := card.Card.Buttons
	if card.Card.MainTitle.Title != "请选择" || len(b) != 2 || b[1].Text != "T-1002 打印机卡纸" || !strings.Contains(card.Card.SubTitleText, "哪一张工单") {
		t.Fatalf("choice card %+v", card)
	}
	u, body := r.click(t, "zhangsan", card, "2")
	if status, reply := r.post(t, u, body); status != http.StatusOK || label(reply) != "已选择：T-1002 打印机卡纸" {
		t.Fatalf("click: %d %+v", status, reply)
	}
	finalCard(t, card, r.updated(t, card), "已选择：T-1002 打印机卡纸")
	var answered bool
	for _, m := range r.h.WeComAPI.Messages() {
		answered = answered || m.Content == gatewaytest.CardChosenPrefix+gatewaytest.CardTickets[1]
	}
	if !answered {
		t.Fatalf("the run did not continue with the option: %+v", r.h.WeComAPI.Messages())
	}
}
