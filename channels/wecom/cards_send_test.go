package wecom_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/silenceper/wechat/v2/cache"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

// newCardApp is an app with cards on against its own fake WeCom.
func newCardApp(t *testing.T, cards bool) (*wecom.Channel, *wecomtest.Server) {
	t.Helper()
	corpID := fmt.Sprintf("wwcard%d", corpSeq.Add(1))
	secret := "S3cret-" + corpID + "-abcdefgh"
	srv := wecomtest.NewServer(t, corpID, secret)
	app, err := wecom.NewApp(wecom.AppConfig{
		Name: "app-hr", CorpID: corpID, AgentID: testAgentID, Secret: secret,
		Token: wecomtest.VectorToken, EncodingAESKey: wecomtest.VectorKey, APIBaseURL: srv.URL(),
		Logger: slog.New(slog.DiscardHandler), Cards: cards,
	}, cache.NewMemory(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	return wecom.NewChannel(app), srv
}

func confirmCard(id, text string) channels.Card {
	return channels.Card{ID: id, Title: "请确认", Text: text, Buttons: []channels.Button{
		{Action: channels.ActionConfirm, Label: "确认", Primary: true}, {Action: channels.ActionCancel, Label: "取消"}}}
}

func TestSendCard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	out := channels.Outbound{Account: "app-hr", ReplyTo: wecomtest.AppReplyTo("zhangsan")}

	t.Run("OK", func(t *testing.T) {
		ch, srv := newCardApp(t, true)
		if n := ch.CardButtons("app-hr"); n != wecom.MaxCardButtons {
			t.Fatalf("CardButtons %d", n)
		}
		if ref := ch.ClickRef("app-hr", wecomtest.AppReplyTo("zhangsan")); ref != "zhangsan" {
			t.Fatalf("ClickRef %q", ref)
		}
		res, err := ch.SendCard(ctx, out, confirmCard("0123456789abcdef", "重置你的 VPN 密码？"))
		cards := srv.Cards()
		if err != nil || len(cards) != 1 || res.MessageID != cards[0].ResponseCode || res.MessageID == "" {
			t.Fatalf("SendCard: %+v, %v; cards %+v", res, err, cards)
		}
		c := cards[0].Card
		if c.TaskID != "h_0123456789abcdef" || c.SubTitleText != "重置你的 VPN 密码？" || c.Buttons[0].Key != "0123456789abcdef:ok" ||
			c.Buttons[0].Style != 1 || c.Buttons[1].Key != "0123456789abcdef:no" || c.Buttons[1].Style != 2 {
			t.Fatalf("card %+v", c)
		}
		srv.InvalidateTokens() // WeCom revoked the token: the update refreshes it once
		err = ch.UpdateCard(ctx, "app-hr", channels.Card{ID: "0123456789abcdef", Title: "已确认", Text: "已执行：VPN 密码已重置", MessageID: res.MessageID})
		ups := srv.CardUpdates()
		if err != nil || len(ups) != 1 || ups[0].Card.MainTitle.Title != "已确认" || ups[0].Card.ReplaceText != "已确认" || ups[0].AtAll != 1 {
			t.Fatalf("UpdateCard: %v; updates %+v", err, ups)
		}
		// A response_code works once: the second update is refused.
		if err := ch.UpdateCard(ctx, "app-hr", channels.Card{ID: "0123456789abcdef", Title: "已确认", MessageID: res.MessageID}); err == nil {
			t.Fatal("a spent response_code updated the card again")
		}
	})

	t.Run("LongBodyGoesFirstAsText", func(t *testing.T) {
		ch, srv := newCardApp(t, true)
		body := strings.Repeat("参数", wecom.MaxCardTextRunes) // twice the card's text
		if _, err := ch.SendCard(ctx, out, confirmCard("00000000000000aa", body)); err != nil {
			t.Fatal(err)
		}
		msgs, cards := srv.Messages(), srv.Cards()
		if len(msgs) != 2 || msgs[0].MsgType != "text" || msgs[0].Content != body || len(cards) != 1 ||
			cards[0].Card.SubTitleText != "" || cards[0].Card.MainTitle.Title != "请确认" {
			t.Fatalf("messages %+v, cards %+v: want the whole body as text, then the card with its title", msgs, cards)
		}
	})

	t.Run("LongBodyOfARefusedCardGoesOnce", func(t *testing.T) {
		// The text that went first is the confirmation the gateway would
		// fall back to: it does not go twice.
		ch, srv := newCardApp(t, true)
		srv.RefuseCards(48002)
		body := strings.Repeat("参数", wecom.MaxCardTextRunes)
		res, err := ch.SendCard(ctx, out, confirmCard("00000000000000ee", body))
		if msgs := srv.Messages(); err != nil || res.MessageID != "" || len(msgs) != 1 || msgs[0].Content != body {
			t.Fatalf("SendCard: %+v, %v; messages %+v: want the text once and no error", res, err, msgs)
		}
	})

	t.Run("RetryAfterLostAnswer", func(t *testing.T) {
		// The first attempt reached WeCom but its answer was lost; the
		// retry's task_id is used: the card is there, sent once.
		ch, srv := newCardApp(t, true)
		srv.LoseAnswers("template_card", 1)
		card := confirmCard("00000000000000bb", "重置你的 VPN 密码？")
		if _, err := ch.SendCard(ctx, out, card); err == nil {
			t.Fatal("a lost answer was a success")
		}
		retry := out
		retry.Attempt, retry.FirstAttemptUnix = 1, time.Now().Unix()
		res, err := ch.SendCard(ctx, retry, card)
		if err != nil || res.MessageID != "" || len(srv.Cards()) != 1 {
			t.Fatalf("retry: %+v, %v; %d cards, want the one delivered and no error", res, err, len(srv.Cards()))
		}
	})

	t.Run("ErrCardsOff", func(t *testing.T) {
		ch, srv := newCardApp(t, false)
		if n := ch.CardButtons("app-hr"); n != 0 {
			t.Fatalf("CardButtons %d with cards off", n)
		}
		if _, err := ch.SendCard(ctx, out, confirmCard("00000000000000cc", "x")); !errors.Is(err, channels.ErrPermanent) || len(srv.Cards()) != 0 {
			t.Fatalf("SendCard with cards off: %v", err)
		}
	})

	t.Run("ErrRefused", func(t *testing.T) {
		ch, srv := newCardApp(t, true)
		srv.RefuseCards(48002)
		if _, err := ch.SendCard(ctx, out, confirmCard("00000000000000dd", "x")); !errors.Is(err, channels.ErrPermanent) {
			t.Fatalf("refused card: %v, want ErrPermanent (the text fallback)", err)
		}
	})
}

// TestDoctorSaysWhatCardsNeed: with cards on, hermes doctor names the
// receive-message URL the clicks need; with cards off it says nothing of
// cards.
func TestDoctorSaysWhatCardsNeed(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		ch, _ := newCardApp(t, on)
		var found *channels.Check
		for _, ck := range ch.Check(context.Background()) {
			if strings.HasSuffix(ck.Name, ": cards") {
				found = &ck
			}
		}
		switch {
		case on && (found == nil || !strings.Contains(found.Detail, "接收消息") || !strings.Contains(found.Detail, "/wecom/app-hr/callback")):
			t.Fatalf("cards on: check %+v, want the receive-message URL named", found)
		case !on && found != nil:
			t.Fatalf("cards off: check %+v", found)
		}
	}
}
