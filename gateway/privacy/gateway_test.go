package privacy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestForgettingLeavesNoCopy: after 「记住 …」, a request that repeats the
// text, /memory and each of the three ways of forgetting, the next model
// request carries the forgotten text nowhere (the memory commands and
// their answers are not history), and no column of any table holds it.
// The forget commands themselves are stored without it.
func TestForgettingLeavesNoCopy(t *testing.T) {
	t.Parallel()
	const secretish = "我常驻上海办公室，工位 12F-031"
	for name, forget := range map[string]string{"ByNumber": "/forget 1", "All": "/forget all", "ByWords": "忘掉 12F-031"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			model := &gatewaytest.MemoryModel{}
			h := gatewaytest.New(t)
			h.Model.SetHandler(model.Handle)
			h.Start(gateway.Deps{})
			f := &gatewaytest.Chat{H: h, Clock: time.Now}

			if got := f.Say(t, "zhangsan", "记住 "+secretish); !strings.Contains(got, secretish) {
				t.Fatalf("记住 answered %q", got)
			}
			f.Say(t, "zhangsan", secretish+"，这层的打印机在哪？")
			if list := f.Say(t, "zhangsan", "/memory"); !strings.Contains(list, "1. "+secretish) {
				t.Fatalf("/memory answered %q", list)
			}
			if got := f.Say(t, "zhangsan", forget); got != "已删除 1 条记忆。" {
				t.Fatalf("%s answered %q", forget, got)
			}
			f.Say(t, "zhangsan", "打印机在哪？")
			if p := model.LastPrompt(); strings.Contains(p, "12F-031") || strings.Contains(p, "我记下了这些") {
				t.Errorf("the request after %s still carries the forgotten text or a memory command: %q", forget, p)
			}
			if found := storetest.CopiesOf(t, h.Pool, secretish); len(found) > 0 {
				t.Errorf("after %s the forgotten text is still stored in %v", forget, found)
			}
			if n := h.Count(`SELECT count(*) FROM memory_audit`); n != 0 {
				t.Errorf("%d audit rows for the user's own commands", n)
			}
		})
	}
}

// TestMemoryListInAGroupIsSentPrivately: /memory in a group lists nothing
// there. zhangsan, who has written to the bot privately, gets the list in
// that chat; lisi, who has not (the AI bot may push only where someone
// wrote first), is told to ask privately.
func TestMemoryListInAGroupIsSentPrivately(t *testing.T) {
	t.Parallel()
	const note = "我在上海办公室，只告诉机器人"
	h := gatewaytest.New(t)
	h.Model.SetHandler((&gatewaytest.MemoryModel{}).Handle)
	ws := wecomtest.NewBotWSServer(t, gatewaytest.WSBotID, gatewaytest.WSSecret)
	h.StartExtra(gatewaytest.WSBotYAML(ws.URL()), gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	if _, err := ws.WaitSubscriptions(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	words := config.DefaultMemoryMessages
	ask := func(m wecomtest.BotMessage, text string) string {
		t.Helper()
		reqID, err := ws.PushMessage(ctx, m.Text(text))
		if err != nil {
			t.Fatal(err)
		}
		fr, err := ws.WaitFrame(ctx, func(fr wecomtest.BotFrame) bool { return fr.ReqID == reqID && fr.Reply.Stream.Finish })
		if err != nil {
			t.Fatal(err)
		}
		h.WaitIdle(ctx)
		return fr.Reply.Stream.Content
	}
	private := wecomtest.BotMessage{MsgID: "p1", AIBotID: gatewaytest.WSBotID, ChatType: "single", UserID: "zhangsan"}
	if got := ask(private, "记住 "+note); !strings.Contains(got, note) {
		t.Fatalf("记住 answered %q", got)
	}
	group := wecomtest.BotMessage{MsgID: "g1", AIBotID: gatewaytest.WSBotID, ChatID: "wrGroup1", ChatType: "group", UserID: "zhangsan"}
	if got := ask(group, "@IT助手 /memory"); !strings.HasSuffix(got, words.SentPrivately) || strings.Contains(got, note) {
		t.Fatalf("/memory in the group answered %q, want %q", got, words.SentPrivately)
	}
	pushed, err := ws.WaitFrame(ctx, func(fr wecomtest.BotFrame) bool { return fr.Cmd == "aibot_send_msg" })
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Reply.ChatID != "zhangsan" || !strings.Contains(pushed.Reply.Markdown.Content, note) {
		t.Fatalf("the list went to %q as %q, want zhangsan's private chat with the note", pushed.Reply.ChatID, pushed.Reply.Markdown.Content)
	}
	for _, fr := range ws.Frames() {
		if fr.Reply.ChatID == "wrGroup1" && strings.Contains(string(fr.Body), note) {
			t.Fatalf("the group saw the note: %s", fr.Body)
		}
	}
	lisi := wecomtest.BotMessage{MsgID: "g2", AIBotID: gatewaytest.WSBotID, ChatID: "wrGroup1", ChatType: "group", UserID: "lisi"}
	if got := ask(lisi, "@IT助手 /memory"); !strings.HasSuffix(got, words.AskPrivately) {
		t.Fatalf("/memory of a user who never wrote privately answered %q, want %q", got, words.AskPrivately)
	}
}

// TestRefusedRememberKeepsNoCopy: 「记住」 of a mobile number is refused,
// and the number is stored nowhere (a memory command's text is not kept
// once answered, and the refusal does not repeat it).
func TestRefusedRememberKeepsNoCopy(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.SetHandler((&gatewaytest.MemoryModel{}).Handle)
	h.Start(gateway.Deps{})
	f := &gatewaytest.Chat{H: h, Clock: time.Now}
	if got := f.Say(t, "zhangsan", "记住 我的手机号是 13812345678"); got != config.DefaultMemoryMessages.Refused {
		t.Fatalf("记住 of a mobile number answered %q", got)
	}
	if found := storetest.CopiesOf(t, h.Pool, "13812345678"); len(found) > 0 {
		t.Errorf("the refused number is stored in %v", found)
	}
}
