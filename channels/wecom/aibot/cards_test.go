package aibot_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// TestCardCallbackTapRunsOnceAndShowsOutcome: in a group, the question
// streams and its card follows through the response_url; another
// member's tap is answered with nothing and changes nothing; the asker's
// tap is answered at once with the card redrawn for everyone and runs the
// skill once, whose result goes through the tap's own response_url; the
// same tap delivered again, a double tap and the same tap at a second
// replica run nothing more and are answered with the settled card.
func TestCardCallbackTapRunsOnceAndShowsOutcome(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	r := newCardRig(t, aibot.ModeCallback)
	second := r.replica(t)
	card := r.askCallback(t, "ask-1", "帮我重置 VPN 密码", true)
	if card.CardType != "button_interaction" || card.MainTitle.Title != "请确认" || len(card.Buttons) != 2 ||
		card.Buttons[0].Text != "确认" || card.Buttons[1].Text != "取消" || !strings.Contains(card.SubTitleText, "重置你的 VPN 密码") {
		t.Fatalf("card %+v: want 请确认 with the question, 确认 and 取消", card)
	}
	inbound := r.count(`SELECT count(*) FROM inbound_messages`)

	if status, ans := r.tap(t, "", "tap-other", bystander, true, card, 0); status != http.StatusOK || ans.ResponseType != "" {
		t.Fatalf("another member's tap: %d %+v, want an empty 200", status, ans)
	}
	r.h.WaitIdle(gatewaytest.WithTimeout(t, 20*time.Second))
	if r.skills.Calls() != 0 || r.count(`SELECT count(*) FROM inbound_messages`) != inbound {
		t.Fatalf("another member's tap ran %d calls or stored a message", r.skills.Calls())
	}

	start := time.Now()
	status, ans := r.tap(t, "", "tap-1", asker, true, card, 0)
	ack := time.Since(start)
	if status != http.StatusOK || ans.ResponseType != "update_template_card" || len(ans.UserIDs) != 0 ||
		ans.TemplateCard.TaskID != card.TaskID || ans.TemplateCard.MainTitle.Title != "已确认 · 执行中" ||
		len(ans.TemplateCard.Buttons) != 1 || ans.TemplateCard.Buttons[0].Style != 4 {
		t.Fatalf("asker's tap: %d %+v, want everyone's card redrawn 已确认 · 执行中, one inert button", status, ans)
	}
	// WeCom's redelivery (same msgid), a double tap (new msgid), and both at
	// the other replica at once: nothing runs again.
	var wg sync.WaitGroup
	for i, id := range []string{"tap-1", "tap-2", "tap-1", "tap-2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := ""
			if i >= 2 {
				base = second
			}
			if status, ans := r.tap(t, base, id, asker, true, card, 0); status != http.StatusOK || ans.TemplateCard.MainTitle.Title != "已处理" {
				t.Errorf("repeat %d (%s): %d %+v, want the settled card", i, id, status, ans)
			}
		}()
	}
	wg.Wait()
	ctx := gatewaytest.WithTimeout(t, 20*time.Second)
	posts, err := r.resp.WaitPosts(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	r.h.WaitIdle(ctx)
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("the skill ran %d times, want once", n)
	}
	got := r.answers("tap-1")
	if len(got) != 1 || !strings.Contains(got[0], "VPN 密码已重置") || !strings.HasPrefix(got[0], "<@"+asker+">") {
		t.Fatalf("the tap's response_url got %q (all posts %+v), want the result once, mentioning the asker", got, posts)
	}
	t.Logf("click-to-ack = click-to-updated-card %v (callback mode: the card is redrawn in the answer)", ack)
}

// TestCardCallbackTapExpired: a tap after agent.confirm_timeout is
// answered with the card saying 已过期 and runs nothing.
func TestCardCallbackTapExpired(t *testing.T) {
	t.Parallel()
	r := newCardRig(t, aibot.ModeCallback)
	card := r.askCallback(t, "ask-2", "帮我重置 VPN 密码", false)
	r.clock.Jump(6 * time.Minute)
	if _, ans := r.tap(t, "", "tap-late", asker, false, card, 0); ans.TemplateCard.MainTitle.Title != "已过期" {
		t.Fatalf("late tap: %+v, want 已过期", ans)
	}
	r.h.WaitIdle(gatewaytest.WithTimeout(t, 20*time.Second))
	if n := r.skills.Calls(); n != 0 {
		t.Fatalf("an expired tap ran the skill %d times", n)
	}
	if got := r.answers("tap-late"); len(got) != 0 {
		t.Fatalf("an expired tap was answered %q", got)
	}
}

// TestCardCallbackTapAndTypedConfirmRunOnce: a tap and a typed 「确认」
// at the same time run the skill once.
func TestCardCallbackTapAndTypedConfirmRunOnce(t *testing.T) {
	t.Parallel()
	r := newCardRig(t, aibot.ModeCallback)
	card := r.askCallback(t, "ask-3", "帮我重置 VPN 密码", false)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.tap(t, "", "tap-race", asker, false, card, 0) }()
	go func() { defer wg.Done(); r.say(t, "typed-3", "确认", false) }()
	wg.Wait()
	r.h.WaitIdle(gatewaytest.WithTimeout(t, 20*time.Second))
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("tap + typed 确认 ran the skill %d times, want once", n)
	}
}

// TestCardCallbackTapForgedRefused: a tap with a forged signature, or one
// signed an hour ago (a captured callback replayed), is refused and
// stores nothing; the card can still be tapped.
func TestCardCallbackTapForgedRefused(t *testing.T) {
	t.Parallel()
	r := newCardRig(t, aibot.ModeCallback)
	card := r.askCallback(t, "ask-4", "帮我重置 VPN 密码", false)
	inbound := r.count(`SELECT count(*) FROM inbound_messages`)
	tap := r.message("tap-forged", asker, false).TemplateCardEvent(card.Buttons[0].Key, card.TaskID)

	// Signed with a token that is not the bot's.
	forger := wecomtest.MustCrypto(t, "NotTheBotsToken", cardKey, "")
	q, body := wecomtest.BotCallback(forger, tap, fmt.Sprint(r.clock.Now().Unix()), "nf")
	if status, _ := gatewaytest.Post(t, r.h.Srv.URL+"/wecom/bot/"+cardBot+"/callback?"+q.Encode(), body); status != http.StatusUnauthorized {
		t.Fatalf("forged tap: status %d", status)
	}
	if status, _ := r.post(t, "", tap, -time.Hour); status != http.StatusUnauthorized {
		t.Fatalf("replayed tap: status %d", status)
	}
	r.h.WaitIdle(gatewaytest.WithTimeout(t, 20*time.Second))
	if n := r.count(`SELECT count(*) FROM cards WHERE state <> 'pending'`); n != 0 || r.skills.Calls() != 0 ||
		r.count(`SELECT count(*) FROM inbound_messages`) != inbound {
		t.Fatalf("a refused tap changed %d cards, ran %d calls or stored a message", n, r.skills.Calls())
	}
	if _, ans := r.tap(t, "", "tap-real", asker, false, card, 0); ans.TemplateCard.MainTitle.Title != "已确认 · 执行中" {
		t.Fatalf("the real tap after the refused ones: %+v", ans)
	}
}

// TestCardCallbackFallsBackToText: where WeCom refuses the card, the
// question goes as text through the same response_url, and typing 确认
// runs it.
func TestCardCallbackFallsBackToText(t *testing.T) {
	t.Parallel()
	r := newCardRig(t, aibot.ModeCallback)
	r.resp.FailNext(wecomtest.CodeBadCard)
	r.say(t, "ask-5", "帮我重置 VPN 密码", false)
	ctx := gatewaytest.WithTimeout(t, 20*time.Second)
	r.h.WaitIdle(ctx)
	if got := r.answers("ask-5"); len(got) != 1 || !strings.Contains(got[0], "重置你的 VPN 密码") {
		t.Fatalf("response_url got %q (posts %+v), want the text confirmation", got, r.resp.Posts())
	}
	r.say(t, "typed-5", "确认", false)
	r.h.WaitIdle(ctx)
	if n := r.skills.Calls(); n != 1 {
		t.Fatalf("typed 确认 after the fallback ran %d calls", n)
	}
}

// TestCardCallbackChoiceContinuesTheRun: a backend's question with
// options is asked with one button per option; the asker's tap continues
// the run as if the option had been typed.
func TestCardCallbackChoiceContinuesTheRun(t *testing.T) {
	t.Parallel()
	r := newCardRig(t, aibot.ModeCallback)
	card := r.askCallback(t, "ask-6", "帮我关闭工单", false)
	if card.MainTitle.Title != "请选择" || len(card.Buttons) != 2 || card.Buttons[1].Text != "T-1002 打印机卡纸" {
		t.Fatalf("choice card %+v", card)
	}
	if _, ans := r.tap(t, "", "tap-pick", asker, false, card, 1); ans.TemplateCard.MainTitle.Title != "已选择：T-1002 打印机卡纸" {
		t.Fatalf("tap: %+v", ans)
	}
	r.h.WaitIdle(gatewaytest.WithTimeout(t, 20*time.Second))
	if got := r.answers("tap-pick"); len(got) != 1 || got[0] != "已选：T-1002 打印机卡纸" {
		t.Fatalf("the run did not continue with the option: %q", got)
	}
}
