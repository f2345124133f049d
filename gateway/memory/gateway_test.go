package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// TestMemoryIsRecalledAcrossResetAndChatsAndForgotten: 「记住 …」 is kept
// for zhangsan of this corp: after /reset, in a group on the AI bot of the
// same corp (with the do-not-recite line), the notes end the system prompt
// of a message they bear on; lisi never sees them, a message they do not
// bear on carries none, and /forget removes them from the next prompt and
// from the database.
func TestMemoryIsRecalledAcrossResetAndChatsAndForgotten(t *testing.T) {
	t.Parallel()
	model := &gatewaytest.MemoryModel{}
	h := gatewaytest.New(t)
	h.Model.SetHandler(model.Handle)
	ws := wecomtest.NewBotWSServer(t, gatewaytest.WSBotID, gatewaytest.WSSecret)
	h.StartExtra(gatewaytest.WSBotYAML(ws.URL()), gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	if _, err := ws.WaitSubscriptions(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	f := &gatewaytest.Chat{H: h, Clock: time.Now}
	words := config.DefaultMemoryMessages

	if got := f.Say(t, "zhangsan", "记住 我在上海办公室，工位 12F-031"); !strings.Contains(got, "好的，我记住了：我在上海办公室") {
		t.Fatalf("记住 answered %q", got)
	}
	f.Say(t, "zhangsan", "/reset")
	f.Say(t, "zhangsan", "上海办公室的打印机在哪？")
	if s := model.LastPrompt(); !strings.Contains(s, "user: <USER_NOTES>\n"+words.Notes+"\n[\"我在上海办公室，工位 12F-031（") {
		t.Fatalf("after /reset the prompt ends %q, want the note", tail(s))
	}
	if s := model.LastSystem(); strings.Contains(s, "USER_NOTES") || strings.Contains(s, "12F-031") {
		t.Fatalf("the note is in the system prompt: %q", tail(s))
	}
	f.Say(t, "zhangsan", "今天食堂吃什么？")
	if s := model.LastPrompt(); strings.Contains(s, "USER_NOTES") {
		t.Errorf("a message the note does not bear on carried it: %q", tail(s))
	}
	f.Say(t, "lisi", "上海办公室的打印机在哪？")
	if s := model.LastPrompt(); strings.Contains(s, "上海办公室，工位") {
		t.Fatalf("lisi's prompt holds zhangsan's note: %q", tail(s))
	}

	// A group on the AI bot of the same corp.
	m := wecomtest.BotMessage{MsgID: "mem-g1", AIBotID: gatewaytest.WSBotID, ChatID: "wrGroup1", ChatType: "group", UserID: "zhangsan"}
	reqID, err := ws.PushMessage(ctx, m.Text("@IT助手 上海办公室 Wi-Fi 密码在哪里看"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.WaitFrame(ctx, func(fr wecomtest.BotFrame) bool { return fr.ReqID == reqID && fr.Reply.Stream.Finish }); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if s := model.LastPrompt(); !strings.Contains(s, words.Notes+"\n"+words.Group+"\n[\"我在上海办公室") {
		t.Fatalf("the group prompt ends %q, want the note and the do-not-recite line", tail(s))
	}

	list := f.Say(t, "zhangsan", "/memory")
	if !strings.Contains(list, "1. 我在上海办公室，工位 12F-031") {
		t.Fatalf("/memory answered %q", list)
	}
	if got := f.Say(t, "zhangsan", "/forget 1"); got != "已删除 1 条记忆。" {
		t.Fatalf("/forget 1 answered %q", got)
	}
	f.Say(t, "zhangsan", "上海办公室的打印机在哪？")
	if s := model.LastPrompt(); strings.Contains(s, "USER_NOTES") {
		t.Errorf("a forgotten note is still in the prompt: %q", tail(s))
	}
	if n := h.Count(`SELECT count(*) FROM memories`); n != 0 {
		t.Errorf("%d memories left in the database after /forget", n)
	}
	if got := f.Say(t, "zhangsan", "/memory"); got != words.None {
		t.Errorf("/memory after /forget answered %q", got)
	}
}

// TestMemoryLearnsWhatTheUserStatesAndKeepsNoSecret: a statement about the
// user is extracted by one model call and kept; a question or small talk
// costs no call; a proposal with an unknown field, too many entries or a
// secret stores nothing; 「记住」 of a password or a mobile number is
// refused; a confirmed write's outcome is kept as what the user was told.
func TestMemoryLearnsWhatTheUserStatesAndKeepsNoSecret(t *testing.T) {
	t.Parallel()
	model := &gatewaytest.MemoryModel{Extracted: func(user string) string {
		switch {
		case strings.Contains(user, "华东"):
			return `{"memories":[{"text":"负责华东区的销售"},{"text":"希望回复简短"}]}`
		case strings.Contains(user, "北京"):
			return `{"memories":[{"text":"常驻北京","confidence":0.9}]}`
		case strings.Contains(user, "深圳"):
			return `{"memories":[{"text":"a"},{"text":"b"},{"text":"c"},{"text":"d"}]}`
		case strings.Contains(user, "邮箱"):
			return `{"memories":[{"text":"邮箱密码是 Abc12345"}]}`
		}
		return `{"memories":[]}`
	}}
	h := gatewaytest.New(t)
	h.Model.SetHandler(model.Handle)
	h.Start(gateway.Deps{})
	f := &gatewaytest.Chat{H: h, Clock: time.Now}
	words := config.DefaultMemoryMessages

	f.Say(t, "zhangsan", "我负责华东区的销售，以后回复请简短一些")
	if n := model.ExtractCalls(); n != 1 {
		t.Fatalf("%d extraction calls for a statement, want 1", n)
	}
	for _, text := range []string{"我的年假还有几天？", "今天天气不错", "好的"} {
		f.Say(t, "zhangsan", text)
	}
	if n := model.ExtractCalls(); n != 1 {
		t.Fatalf("%d extraction calls after a question and small talk, want still 1", n)
	}
	for _, text := range []string{"我在北京出差这周", "我现在在深圳开会", "我的邮箱以后改用新的"} {
		f.Say(t, "zhangsan", text)
	}
	if n := model.ExtractCalls(); n != 4 {
		t.Fatalf("%d extraction calls, want 4", n)
	}
	if got := f.Say(t, "zhangsan", "记住 我的 VPN 密码是 Abc12345"); got != words.Refused {
		t.Errorf("记住 a password answered %q", got)
	}
	if got := f.Say(t, "zhangsan", "记住 我的手机 13812345678"); got != words.Refused {
		t.Errorf("记住 a mobile number answered %q", got)
	}
	f.Say(t, "zhangsan", "帮我重置 VPN 密码")
	f.Say(t, "zhangsan", "确认")

	var kept []string
	rows, err := h.Pool.Query(t.Context(), `SELECT kind || ':' || text FROM memories WHERE user_id = 'zhangsan' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, s)
	}
	if len(kept) != 3 || kept[0] != "fact:负责华东区的销售" || kept[1] != "preference:希望回复简短" ||
		!strings.HasPrefix(kept[2], "outcome:"+time.Now().Format("2006-01-02")+" 已执行：") {
		t.Fatalf("memories kept %q; want the two statements and the confirmed reset", kept)
	}
	if n := h.Count(`SELECT count(*) FROM memories WHERE text LIKE '%Abc12345%' OR text LIKE '%13812345678%' OR text LIKE '%****%'`); n != 0 {
		t.Errorf("a secret or a masked value was stored")
	}
}

// tail is the end of a prompt, for a failure message.
func tail(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[len(r)-200:])
	}
	return s
}

// TestMemoryOutlivesARestart: what zhangsan asked to remember is recalled
// by a gateway started afresh on the same database.
func TestMemoryOutlivesARestart(t *testing.T) {
	t.Parallel()
	model := &gatewaytest.MemoryModel{}
	h := gatewaytest.New(t)
	h.Model.SetHandler(model.Handle)
	first := h.Start(gateway.Deps{})
	f := &gatewaytest.Chat{H: h, Clock: time.Now}
	f.Say(t, "zhangsan", "记住 叫我小王")
	stopCtx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := first.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	h.Start(gateway.Deps{})
	f.Say(t, "zhangsan", "小王的工位在哪")
	if s := model.LastPrompt(); !strings.Contains(s, "[\"叫我小王（") && !strings.Contains(s, ",\"叫我小王（") {
		t.Fatalf("after a restart the prompt ends %q, want the note", tail(s))
	}
}

// TestMemoryWorksAsEmployeesExpect: a self-statement in a form no cue
// list named is learned, and the user is told in one line what was kept
// and how to undo it; a preference about how to answer shapes a later
// request it shares no word with; /help lists the memory commands.
func TestMemoryWorksAsEmployeesExpect(t *testing.T) {
	t.Parallel()
	model := &gatewaytest.MemoryModel{Extracted: func(user string) string {
		if strings.Contains(user, "常驻上海办公室") {
			return `{"memories":[{"text":"常驻上海办公室","kind":"fact"}]}`
		}
		return `{"memories":[]}`
	}}
	h := gatewaytest.New(t)
	h.Model.SetHandler(model.Handle)
	h.Start(gateway.Deps{})
	f := &gatewaytest.Chat{H: h, Clock: time.Now}
	words := config.DefaultMemoryMessages

	f.Say(t, "zhangsan", "我常驻上海办公室")
	if model.ExtractCalls() != 1 {
		t.Fatalf("%d extraction calls for 「我常驻上海办公室」, want 1", model.ExtractCalls())
	}
	sent := h.WeComAPI.Messages()
	if last := sent[len(sent)-1].Content; last != fmt.Sprintf(words.Learned, "常驻上海办公室") {
		t.Errorf("the last message after the answer is %q, want the learned line", last)
	}

	if got := f.Say(t, "zhangsan", "记住 以后回复我请用英文"); !strings.Contains(got, "/forget") {
		t.Errorf("记住 answered %q, want how to undo it", got)
	}
	f.Say(t, "zhangsan", "帮我写一封请假邮件")
	if p := model.LastPrompt(); !strings.Contains(p, "以后回复我请用英文") {
		t.Errorf("the preference does not reach a request it shares no word with: %q", tail(p))
	}
	if help := f.Say(t, "zhangsan", "/help"); !strings.Contains(help, words.Help) {
		t.Errorf("/help = %q, want the memory commands", help)
	}
}
