package aibot_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

// textOf posts a text message (in a group, or a single chat) and returns
// the Text the sink got.
func (f *callbackBot) textOf(t *testing.T, group bool, content string) string {
	t.Helper()
	n := len(f.sink.Accepted())
	m := f.single("m-at-" + strconv.Itoa(n))
	if group {
		m = f.group(m.MsgID)
	}
	if rec := f.post(t, m.Text(content)); rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	got := f.sink.Accepted()
	if len(got) != n+1 {
		t.Fatalf("accepted %d messages, want %d", len(got), n+1)
	}
	in := got[n]
	if in.Mentioned != group {
		t.Fatalf("Mentioned %v in a group=%v message", in.Mentioned, group)
	}
	return in.Text
}

func withBotName(name string) func(*aibot.Config) {
	return func(s *aibot.Config) { s.BotName = name }
}

// The bot's own mention is removed wherever it stands; other people's stay,
// so that the model knows who "他" is.
func TestBot_MentionStripped(t *testing.T) {
	tests := []struct {
		name, botName, content, want string
	}{
		{"First", "IT助手", "@IT助手\u2005重置密码", "重置密码"},
		{"OnlyMention", "IT助手", "@IT助手", ""},
		{"Last", "IT助手", "重置密码 @IT助手", "重置密码"},
		{"AfterAnother", "IT助手", "@王五\u2005@IT助手\u2005帮他查一下", "@王五\u2005帮他查一下"},
		{"AfterAnotherASCIISpace", "IT助手", "@王五 @IT助手 帮他查一下", "@王五 帮他查一下"},
		{"BeforeAnother", "IT助手", "@IT助手\u2005@王五\u2005的年假还有几天", "@王五\u2005的年假还有几天"},
		{"Middle", "IT助手", "请 @IT助手 帮 @王五 查一下", "请 帮 @王五 查一下"},
		{"Twice", "IT助手", "@IT助手 @IT助手 你好", "你好"},
		{"NotAnEmail", "IT助手", "发到 a@b.com @IT助手", "发到 a@b.com"},
		{"NameWithSpace", "HR 助手", "@王五 @HR 助手 帮他查", "@王五 帮他查"},
		{"NameWithAt", "@IT助手", "@王五 @IT助手 帮他查", "@王五 帮他查"},
		{"PrefixOfAnotherName", "IT", "@IT助手 @IT 你好", "@IT助手 你好"},
		// Without bot_name, a message with one mention has the bot's.
		{"UnnamedLast", "", "重置密码 @IT助手", "重置密码"},
		{"UnnamedFirst", "", "@IT助手\u2005重置密码", "重置密码"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newCallbackBot(t, withBotName(tt.botName))
			if got := f.textOf(t, true, tt.content); got != tt.want {
				t.Fatalf("Text %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("SingleChatKeepsAt", func(t *testing.T) {
		f := newCallbackBot(t, withBotName("IT助手"))
		if got := f.textOf(t, false, "@IT助手 是谁"); got != "@IT助手 是谁" {
			t.Fatalf("Text %q, want it untouched", got)
		}
	})
}

// Without bot_name, the bot learns its name from a message that mentions
// only it; before that, a message with several mentions keeps them all.
func TestBot_MentionNameLearned(t *testing.T) {
	f := newCallbackBot(t)
	const ask = "@王五\u2005@IT助手\u2005帮他查一下"
	if got := f.textOf(t, true, ask); got != ask {
		t.Fatalf("before the name is known: Text %q, want %q (whose mention is whose is unknown)", got, ask)
	}
	if got := f.textOf(t, true, "@IT助手\u2005你好"); got != "你好" {
		t.Fatalf("Text %q, want %q", got, "你好")
	}
	if got, want := f.textOf(t, true, ask), "@王五\u2005帮他查一下"; got != want {
		t.Fatalf("after the name is known: Text %q, want %q", got, want)
	}
}

// Events are recognised by their type: one that names no user is
// acknowledged and not stored, never refused as malformed.
func TestBot_Callback_Events(t *testing.T) {
	f := newCallbackBot(t)
	anon := wecomtest.BotMessage{MsgID: "ev-anon", AIBotID: "aib-1", CreateTime: botT0.Unix()}
	card := f.single("ev-card")
	card.CreateTime = botT0.Unix()
	tests := []struct {
		name   string
		plain  []byte
		status int
		stored bool
	}{
		{"FeedbackWithoutUser", anon.Event("feedback_event"), http.StatusOK, false},
		{"TemplateCardWithoutUser", anon.Event("template_card_event"), http.StatusOK, false},
		{"DisconnectedInCallbackMode", wecomtest.DisconnectedEvent("ev-disc", "aib-1", botT0.Unix()), http.StatusOK, false},
		// A tap on a card Hermes did not send (no Hermes button key) is
		// acknowledged and not stored (cards.go takes Hermes's own).
		{"TemplateCardNotHermes", card.Event("template_card_event"), http.StatusOK, false},
		{"FeedbackWithUser", card.Event("feedback_event"), http.StatusOK, true},
		{"ErrMalformedNoEventType", []byte(`{"msgid":"ev-x","msgtype":"event","from":{"userid":"zhangsan"}}`), http.StatusBadRequest, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(f.sink.Accepted())
			rec := f.post(t, tt.plain)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if rec.Code == http.StatusOK && rec.Body.Len() != 0 {
				t.Fatalf("an event got a passive reply: %s", rec.Body)
			}
			got := f.sink.Accepted()
			if stored := len(got) > n; stored != tt.stored {
				t.Fatalf("stored = %v, want %v", stored, tt.stored)
			}
			if tt.stored && (got[n].MsgType != channels.TypeEvent || got[n].Sender.UserID != "zhangsan") {
				t.Fatalf("stored %+v", got[n])
			}
		})
	}
	if refused := f.sink.Refusals(); len(refused) != 1 {
		t.Fatalf("refusals %q, want only the event without a type", refused)
	}
}

// A from.userid over WeCom's 64 bytes is no sender: replies keep room for
// the asker's mention on that limit.
func TestBot_Callback_LongUserIDRefused(t *testing.T) {
	f := newCallbackBot(t)
	m := f.single("m-long")
	m.UserID = strings.Repeat("u", 65)
	if rec := f.post(t, m.Text("hi")); rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", rec.Code)
	}
}
