package dingtalk_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// buttonTemplate is the robots' button card template in these tests.
const buttonTemplate = "hermes-confirm-0001.schema"

// cardRig is a real gateway serving one DingTalk robot in Stream mode with
// a button card template, and the card tests' skills and model
// (gatewaytest.CardSkills, CardModel).
type cardRig struct {
	*hermes
	skills *gatewaytest.CardSkills
}

func newCardRig(t *testing.T, robot string) *cardRig {
	t.Helper()
	t.Parallel()
	skills := gatewaytest.NewCardSkills(t)
	if robot == "" {
		robot = "      mode: stream\n      button_card_template_id: " + buttonTemplate + "\n"
	}
	r := &cardRig{hermes: startWith(t, robot, skills.FS), skills: skills}
	r.model.SetHandler(gatewaytest.CardModel)
	// A company's backend takes longer than the ack of the tap that ran
	// it, which DingTalk redraws the card with; the card's update with the
	// result is queued after the call. The fake backend answers at once,
	// so it first waits for the acks, or a late ack would redraw the card
	// over the result. (Hermes does not order the two itself: a backend
	// answering within the ack's own delay leaves the card showing
	// 已确认 · 执行中.)
	skills.BeforeReset(func() { _ = r.fake.WaitAnswered(ctxFor(t, 10*time.Second)) })
	if strings.Contains(robot, "mode: stream") {
		r.waitLive(t, 1)
	}
	return r
}

func (r *cardRig) waitLive(t *testing.T, live int) {
	t.Helper()
	if err := r.fake.WaitStream(ctxFor(t, 20*time.Second), func(_ []dingtalktest.Ack, _, l int) bool { return l == live }); err != nil {
		t.Fatal(err)
	}
}

// message is zhangsan's text message msgID, in a group (@-mentioning the
// robot) or in the single chat.
func message(msgID, text string, group bool) dingtalktest.Message {
	m := dingtalktest.Message{MsgID: msgID, Text: text, ConversationID: "cid-zs", StaffID: "zhangsan", Nick: "张三", CorpID: corpID}
	if group {
		m.Group, m.InAtList, m.ConversationID = true, true, "cid-group"
	}
	return m
}

// say pushes m over the stream and waits until its frame is acked and
// every job ran.
func (r *cardRig) say(t *testing.T, m dingtalktest.Message) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	id, err := r.fake.PushCallback(ctx, m.JSON())
	if err != nil {
		t.Fatal(err)
	}
	r.waitAcks(t, id, 1)
	r.waitIdle(ctx)
}

// ask has zhangsan ask for the VPN reset; it returns the card Hermes sent
// (its outTrackId).
func (r *cardRig) ask(t *testing.T, msgID string, group bool) string {
	t.Helper()
	r.say(t, message(msgID, "帮我重置 VPN 密码", group))
	track, params := r.lastCard(t)
	var buttons []struct{ Label, Action, Primary string }
	if err := json.Unmarshal([]byte(params["buttons"]), &buttons); err != nil || len(buttons) != 2 ||
		buttons[0].Label != "确认" || buttons[0].Action != "ok" || buttons[1].Label != "取消" || params["status"] != "pending" ||
		!strings.Contains(params["body"], "重置你的 VPN 密码") {
		t.Fatalf("card %+v (%v): want 确认 and 取消 and the question", params, err)
	}
	return track
}

// lastCard is the last button card created, and its variables.
func (r *cardRig) lastCard(t *testing.T) (string, map[string]string) {
	t.Helper()
	for _, c := range slicesReverse(r.fake.Cards()) {
		if c.Op == "create" && c.Template == buttonTemplate {
			if c.CallbackType != "STREAM" {
				t.Fatalf("card created with callbackType %q", c.CallbackType)
			}
			return c.OutTrackID, c.Params
		}
	}
	t.Fatalf("no button card in %+v (sent %+v)", r.fake.Cards(), r.fake.Sent())
	return "", nil
}

func slicesReverse[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// cardAnswer is DingTalk's reading of a tap's ack data.
type cardAnswer struct {
	Response struct {
		CardData *struct {
			CardParamMap map[string]string `json:"cardParamMap"`
		} `json:"cardData"`
		UserPrivateData *struct {
			CardParamMap map[string]string `json:"cardParamMap"`
		} `json:"userPrivateData"`
	} `json:"response"`
	raw string
}

func (a cardAnswer) title() string {
	if a.Response.CardData == nil {
		return ""
	}
	return a.Response.CardData.CardParamMap["title"]
}

// tap pushes user's tap on action of card track (on connection conn, 0
// the newest) and waits for its ack.
func (r *cardRig) tap(t *testing.T, track, user, action string, conn int) (string, cardAnswer) {
	t.Helper()
	id, err := r.fake.PushTap(ctxFor(t, 10*time.Second), dingtalktest.Tap{OutTrackID: track, UserID: user, CorpID: corpID, Action: action}, conn)
	if err != nil {
		t.Fatal(err)
	}
	return id, r.answer(t, id, 1)
}

// answer waits for the n-th ack of frame id and reads it.
func (r *cardRig) answer(t *testing.T, id string, n int) cardAnswer {
	t.Helper()
	acks := r.waitAcks(t, id, n)
	a := cardAnswer{raw: acks[n-1].Data}
	if acks[n-1].Code != 200 || json.Unmarshal([]byte(a.raw), &a) != nil {
		t.Fatalf("ack %+v", acks[n-1])
	}
	return a
}

// waitAcks waits until frame id was acked n times and returns its acks.
func (r *cardRig) waitAcks(t *testing.T, id string, n int) []dingtalktest.Ack {
	t.Helper()
	var mine []dingtalktest.Ack
	err := r.fake.WaitStream(ctxFor(t, 20*time.Second), func(acks []dingtalktest.Ack, _, _ int) bool {
		mine = mine[:0]
		for _, a := range acks {
			if a.MessageID == id {
				mine = append(mine, a)
			}
		}
		return len(mine) >= n
	})
	if err != nil {
		t.Fatal(err)
	}
	return mine
}

// settled waits until every job ran and returns how card track looks.
func (r *cardRig) settled(t *testing.T, track string) dingtalktest.CardState {
	t.Helper()
	r.waitIdle(ctxFor(t, 30*time.Second))
	st, ok := r.fake.Card(track)
	if !ok {
		t.Fatalf("card %s never created", track)
	}
	return st
}

// TestCardTapRunsOnceAndUpdatesCard: in a group, another member's tap
// changes nothing ({"response":{}}, nothing stored); the asker's tap runs
// the skill once, answered in the ack with the card's new state; a double
// tap and DingTalk's redelivery of the tap run nothing more; the card then
// shows 已确认 with the result for everyone, through PUT card/instances.
func TestCardTapRunsOnceAndUpdatesCard(t *testing.T) {
	r := newCardRig(t, "")
	track := r.ask(t, "msg-ask1", true)
	if c := r.fake.Cards(); c[len(c)-1].AtUsers["zhangsan"] != "张三" {
		t.Errorf("group card mentions %v, want the asker", c[len(c)-1].AtUsers)
	}
	inbound := r.count(`SELECT count(*) FROM inbound_messages`)

	_, ans := r.tap(t, track, "lisi", "ok", 0)
	if ans.raw != `{"response":{}}` {
		t.Fatalf("another member's tap answered %s, want {\"response\":{}}", ans.raw)
	}
	r.waitIdle(ctxFor(t, 30*time.Second))
	if st, _ := r.fake.Card(track); r.skills.Calls() != 0 || st.Changes != 0 || r.count(`SELECT count(*) FROM inbound_messages`) != inbound {
		t.Fatalf("another member's tap: %d calls, %d card changes, or a message stored", r.skills.Calls(), st.Changes)
	}

	start := time.Now()
	first, ans := r.tap(t, track, "zhangsan", "ok", 0)
	ack := time.Since(start)
	if ans.title() != "已确认 · 执行中" || ans.Response.CardData.CardParamMap["status"] != "done" {
		t.Fatalf("asker's tap answered %s", ans.raw)
	}
	// Tapped again (a new frame) and the first frame pushed again (its ack
	// lost), at once: answered as settled, nothing runs again.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, a := r.tap(t, track, "zhangsan", "ok", 0); !a.noteOnly("已处理") {
			t.Errorf("double tap answered %s", a.raw)
		}
	}()
	go func() {
		defer wg.Done()
		if err := r.fake.PushAgain(ctxFor(t, 10*time.Second), first, 0); err != nil {
			t.Error(err)
			return
		}
		if a := r.answer(t, first, 2); !a.noteOnly("已处理") {
			t.Errorf("redelivered tap answered %s", a.raw)
		}
	}()
	wg.Wait()
	st := r.settled(t, track)
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("the skill ran %d times, want once", n)
	}
	if st.Params["title"] != "已确认" || !strings.Contains(st.Params["body"], "VPN 密码已重置") || st.Params["status"] != "done" {
		for _, c := range r.fake.Cards() { // the card's history, to tell an update lost from one overwritten
			t.Logf("card call %s %s title %q at %s", c.Op, c.OutTrackID, c.Params["title"], c.At.Format("15:04:05.000000"))
		}
		t.Fatalf("card now %+v: want 已确认, the result, no buttons", st.Params)
	}
	t.Logf("click-to-ack %v, click-to-updated-card %v (fakes, Stream mode)", ack, st.At.Sub(start))
	// A tap after the outcome is shown tells the tapper, and leaves the
	// card as everyone sees it.
	if _, a := r.tap(t, track, "zhangsan", "no", 0); !a.noteOnly("已处理") {
		t.Errorf("late tap answered %s", a.raw)
	}
	if now := r.settled(t, track); now.Params["title"] != "已确认" || r.skills.Calls() != 1 {
		t.Fatalf("a late tap redrew the card %+v", now.Params)
	}
}

// noteOnly: the answer redraws nothing for everyone and tells the tapper
// note privately.
func (a cardAnswer) noteOnly(note string) bool {
	return a.Response.CardData == nil && a.Response.UserPrivateData != nil && a.Response.UserPrivateData.CardParamMap["note"] == note
}

// TestCardTapExpired: a tap after agent.confirm_timeout says 已过期 and
// runs nothing; the card shows 已过期 for everyone.
func TestCardTapExpired(t *testing.T) {
	r := newCardRig(t, "")
	track := r.ask(t, "msg-ask2", false)
	r.clock.Add(6 * time.Minute)
	if _, ans := r.tap(t, track, "zhangsan", "ok", 0); ans.title() != "已过期" {
		t.Fatalf("late tap answered %s", ans.raw)
	}
	if st := r.settled(t, track); st.Params["title"] != "已过期" || st.Params["status"] != "done" || r.skills.Calls() != 0 {
		t.Fatalf("card %+v after %d calls", st.Params, r.skills.Calls())
	}
}

// TestCardTapAndTypedConfirmRunOnce: a tap and a typed 「确认」 at the same
// time run the skill once.
func TestCardTapAndTypedConfirmRunOnce(t *testing.T) {
	r := newCardRig(t, "")
	track := r.ask(t, "msg-ask3", false)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.tap(t, track, "zhangsan", "ok", 0) }()
	go func() { defer wg.Done(); r.say(t, message("msg-typed3", "确认", false)) }()
	wg.Wait()
	r.waitIdle(ctxFor(t, 30*time.Second))
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("tap + typed 确认 ran the skill %d times, want once", n)
	}
}

// TestCardSameTapAtTwoReplicas: the same tap pushed to two replicas at
// once (a redelivery reaching the other one), and a second tap split
// between them, run the skill once; one answer takes the tap.
func TestCardSameTapAtTwoReplicas(t *testing.T) {
	r := newCardRig(t, "")
	r.replica()
	r.waitLive(t, 2)
	track := r.ask(t, "msg-ask4", false)
	titles := make([]string, 4)
	var wg sync.WaitGroup
	ids := make([]string, 2)
	for i := range ids {
		id, err := r.fake.PushTap(ctxFor(t, 10*time.Second), dingtalktest.Tap{OutTrackID: track, UserID: "zhangsan", CorpID: corpID, Action: "ok"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.fake.PushAgain(ctxFor(t, 10*time.Second), id, 2); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, id := range ids {
		acks := r.waitAcks(t, id, 2)
		for j, a := range acks[:2] {
			var ans cardAnswer
			_ = json.Unmarshal([]byte(a.Data), &ans)
			titles[2*i+j] = ans.title()
		}
	}
	taken := 0
	for _, title := range titles {
		if title == "已确认 · 执行中" {
			taken++
		}
	}
	if st := r.settled(t, track); taken != 1 || r.skills.Calls() != 1 || st.Params["title"] != "已确认" {
		t.Fatalf("answers %q, %d calls, card %+v: want one tap taken, one run", titles, r.skills.Calls(), st.Params)
	}
}

// TestCardTapRefused: a tap naming another corp is refused: acked with
// {"response":{}} so DingTalk does not push it again, counted as a refused
// callback, and nothing is stored or run. (Over HTTP, TestCardHTTPMode.)
func TestCardTapRefused(t *testing.T) {
	r := newCardRig(t, "")
	track := r.ask(t, "msg-ask5", false)
	inbound := r.count(`SELECT count(*) FROM inbound_messages`)
	id, err := r.fake.PushTap(ctxFor(t, 10*time.Second), dingtalktest.Tap{OutTrackID: track, UserID: "zhangsan", CorpID: "dingothercorp", Action: "ok"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a := r.answer(t, id, 1); a.raw != `{"response":{}}` {
		t.Fatalf("other corp's tap answered %s", a.raw)
	}
	r.waitIdle(ctxFor(t, 30*time.Second))
	if n := r.count(`SELECT count(*) FROM cards WHERE state <> 'pending'`); n != 0 || r.skills.Calls() != 0 ||
		r.count(`SELECT count(*) FROM inbound_messages`) != inbound {
		t.Fatalf("a refused tap changed %d cards, ran %d calls or stored a message", n, r.skills.Calls())
	}
	if n := r.count(`SELECT count(*) FROM callback_refusals WHERE channel = 'dingtalk' AND "check" = 'corp'`); n != 1 {
		t.Errorf("%d corp refusals recorded, want the tap's", n)
	}
}

// TestCardFallsBackToText: where DingTalk refuses the card (the app lacks
// Card.Instance.Write), the confirmation goes as text, and typing 确认 runs
// it; no card is updated.
func TestCardFallsBackToText(t *testing.T) {
	r := newCardRig(t, "")
	r.fake.Fail("/v1.0/card/instances/createAndDeliver", 1, http.StatusForbidden, "Forbidden.AccessDenied.AccessTokenPermissionDenied")
	r.say(t, message("msg-ask6", "帮我重置 VPN 密码", false))
	sent := r.fake.Sent()
	if len(sent) != 1 || !strings.Contains(sent[0].Text, "重置你的 VPN 密码") {
		t.Fatalf("sent %+v: want the text confirmation", sent)
	}
	r.say(t, message("msg-yes6", "确认", false))
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("typed 确认 after the fallback ran %d calls", n)
	}
	for _, c := range r.fake.Cards() {
		if c.Op != "create" || c.Template != buttonTemplate {
			t.Fatalf("card call %+v after a card that was never sent", c)
		}
	}
}

// TestChoiceCardTapContinuesTheRun: a backend's question with options is
// asked with one button per option; the asker's tap continues the run as
// if the option had been typed, and the card shows the choice.
func TestChoiceCardTapContinuesTheRun(t *testing.T) {
	r := newCardRig(t, "")
	r.say(t, message("msg-pick", "帮我关闭工单", false))
	track, params := r.lastCard(t)
	var buttons []struct{ Label, Action string }
	if err := json.Unmarshal([]byte(params["buttons"]), &buttons); err != nil || len(buttons) != 2 ||
		buttons[1].Label != "T-1002 打印机卡纸" || !strings.Contains(params["body"], "哪一张工单") {
		t.Fatalf("choice card %+v", params)
	}
	if _, ans := r.tap(t, track, "zhangsan", buttons[1].Action, 0); ans.title() != "已选择：T-1002 打印机卡纸" {
		t.Fatalf("tap answered %s", ans.raw)
	}
	if st := r.settled(t, track); st.Params["title"] != "已选择：T-1002 打印机卡纸" || st.Params["status"] != "done" {
		t.Fatalf("card %+v", st.Params)
	}
	answered := false
	for _, s := range r.fake.Sent() {
		answered = answered || strings.Contains(s.Text, "已选：T-1002 打印机卡纸")
	}
	if !answered {
		t.Fatalf("the run did not continue with the option: %+v", r.fake.Sent())
	}
}

// TestCardHTTPMode: a robot in HTTP mode with a button template asks with
// a card; its messages come over HTTP, its taps over a Stream connection
// that takes only the card topic (the one path DingTalk documents for
// taps). The asker's tap runs the call once; the robot's HTTP route takes
// no card callback, signed or forged: refused, nothing stored.
func TestCardHTTPMode(t *testing.T) {
	r := newCardRig(t, "      button_card_template_id: "+buttonTemplate+"\n")
	r.waitLive(t, 1)
	if got := r.post(message("msg-ask7", "帮我重置 VPN 密码", false), appSecret); got != http.StatusOK {
		t.Fatalf("status %d", got)
	}
	r.waitIdle(ctxFor(t, 30*time.Second))
	track, params := r.lastCard(t)
	if !strings.Contains(params["body"], "重置你的 VPN 密码") || params["status"] != "pending" {
		t.Fatalf("card %+v: want the question with its buttons", params)
	}
	inbound := r.count(`SELECT count(*) FROM inbound_messages`)
	tap := dingtalktest.Tap{OutTrackID: track, UserID: "zhangsan", CorpID: corpID, Action: "ok"}.JSON("IM_ROBOT", "zhangsan")
	for _, secret := range []string{appSecret, "guessed-secret"} {
		if got := r.postBody(tap, secret); got != http.StatusBadRequest && got != http.StatusUnauthorized {
			t.Errorf("card callback on the robot route: status %d", got)
		}
	}
	r.waitIdle(ctxFor(t, 30*time.Second))
	if n := r.count(`SELECT count(*) FROM inbound_messages`); n != inbound || r.skills.Calls() != 0 {
		t.Fatalf("a card callback over HTTP stored %d messages or ran %d calls", n-inbound, r.skills.Calls())
	}
	if _, ans := r.tap(t, track, "zhangsan", "ok", 0); ans.title() != "已确认 · 执行中" {
		t.Fatalf("tap over the stream answered %s", ans.raw)
	}
	if st := r.settled(t, track); st.Params["title"] != "已确认" || r.skills.Calls() != 1 {
		t.Fatalf("card %+v after %d calls, want 已确认 after one", st.Params, r.skills.Calls())
	}
}

// TestCardBesideStreamedAnswer: with an AI card too, the question streams
// into the AI card, and the button card follows it; its tap runs the call
// once and the button card shows the outcome.
func TestCardBesideStreamedAnswer(t *testing.T) {
	r := newCardRig(t, "      mode: stream\n      button_card_template_id: "+buttonTemplate+
		"\n      card_template_id: tpl.schema\n      card_interval: 20ms\n")
	track := r.ask(t, "msg-ask8", false)
	streamed := false
	for _, c := range r.fake.Cards() {
		streamed = streamed || (c.Op == "stream" && c.Finalize && strings.Contains(c.Content, "重置你的 VPN 密码"))
	}
	if !streamed {
		t.Fatalf("the question did not stream into the AI card: %+v", r.fake.Cards())
	}
	if _, ans := r.tap(t, track, "zhangsan", "ok", 0); ans.title() != "已确认 · 执行中" {
		t.Fatalf("tap answered %s", ans.raw)
	}
	if st := r.settled(t, track); st.Params["title"] != "已确认" || r.skills.Calls() != 1 {
		t.Fatalf("card %+v after %d calls", st.Params, r.skills.Calls())
	}
}

// TestAnswerRatedByButton: with a button template and no AI card, an
// answer is a button card with 👍 / 👎; another member's tap rates
// nothing; the asker's tap rates that answer's run, and the card shows it
// without buttons for everyone.
func TestAnswerRatedByButton(t *testing.T) {
	r := newCardRig(t, "")
	r.say(t, message("msg-rate1", "你好", true))
	track, params := r.lastCard(t)
	var buttons []struct{ Label, Action string }
	if err := json.Unmarshal([]byte(params["buttons"]), &buttons); err != nil || len(buttons) != 2 ||
		buttons[0].Action != "up" || buttons[1].Action != "down" || params["body"] != "好的。" || params["title"] != "" {
		t.Fatalf("answer card %+v (%v): want the answer with 👍 and 👎", params, err)
	}
	rating := func() int { return r.count(`SELECT coalesce(sum(rating), 0) FROM run_ratings`) }

	if _, ans := r.tap(t, track, "lisi", "up", 0); ans.raw != `{"response":{}}` || rating() != 0 {
		t.Fatalf("another member's tap answered %s, rating %d", ans.raw, rating())
	}
	_, ans := r.tap(t, track, "zhangsan", "up", 0)
	if ans.title() != "已评价：👍 有用" || ans.Response.CardData.CardParamMap["status"] != "done" || rating() != 1 {
		t.Fatalf("asker's tap answered %s, rating %d", ans.raw, rating())
	}
	if st := r.settled(t, track); st.Params["title"] != "已评价：👍 有用" || st.Params["status"] != "done" || st.Params["body"] != "好的。" {
		t.Fatalf("card after the rating %+v", st.Params)
	}
}
