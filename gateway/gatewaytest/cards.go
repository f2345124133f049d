package gatewaytest

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
)

// What the card skills' backend and model answer.
const (
	// CardResetSummary is the reset's result, which a confirmed card shows.
	CardResetSummary = "VPN 密码已重置"
	// CardTicketQuestion is the question of it_ticket_close, asked with
	// the two CardTickets as options.
	CardTicketQuestion = "你要处理哪一张工单？"
	// CardChosenPrefix starts the model's answer after an option was
	// chosen: "已选：" and the option.
	CardChosenPrefix = "已选："
)

// CardTickets are the options it_ticket_close asks to choose from.
var CardTickets = []string{"T-1001 VPN 无法连接", "T-1002 打印机卡纸"}

// CardSkills are the skills of the card tests, for Deps.SkillsFS:
// it_vpn_reset needs 「确认」 ("重置你的 VPN 密码？") and counts its calls;
// it_ticket_close's backend asks which ticket, with CardTickets as
// options. CardModel calls them.
type CardSkills struct {
	FS     fs.FS
	calls  atomic.Int32
	before atomic.Pointer[func()]
}

// BeforeReset makes the reset's backend call f before it answers: a test
// orders the reset after something the real world does first.
func (s *CardSkills) BeforeReset(f func()) { s.before.Store(&f) }

// NewCardSkills starts their backend until t ends.
func NewCardSkills(t testing.TB) *CardSkills {
	t.Helper()
	s := &CardSkills{}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "application/json")
		if req.URL.Path == "/tickets" {
			_, _ = io.WriteString(w, `{"requires_followup":true,"question":"`+CardTicketQuestion+`","options":["`+strings.Join(CardTickets, `","`)+`"]}`)
			return
		}
		if f := s.before.Load(); f != nil {
			(*f)()
		}
		s.calls.Add(1)
		_, _ = io.WriteString(w, `{"summary":"`+CardResetSummary+`"}`)
	}))
	t.Cleanup(backend.Close)
	skill := "---\nname: it_vpn_reset\ndescription: 重置 VPN 密码\nparameters:\n  type: object\n  properties: {}\n" +
		"endpoint: " + backend.URL + "/reset\nconfirm: {prompt: \"重置你的 VPN 密码？\"}\nidentity: none\n---\n"
	tickets := "---\nname: it_ticket_close\ndescription: 关闭工单\nparameters:\n  type: object\n  properties: {}\n" +
		"endpoint: " + backend.URL + "/tickets\nidentity: none\n---\n"
	s.FS = fstest.MapFS{"it_vpn_reset/SKILL.md": {Data: []byte(skill)}, "it_ticket_close/SKILL.md": {Data: []byte(tickets)}}
	return s
}

// Calls is how many times the reset ran.
func (s *CardSkills) Calls() int { return int(s.calls.Load()) }

// CardModel is the model of the card tests (openaitest.Server.SetHandler):
// 关闭工单 calls it_ticket_close, a chosen ticket is answered
// CardChosenPrefix + the ticket, anything about the VPN calls
// it_vpn_reset, the rest is 好的。
func CardModel(req openai.ChatCompletionRequest) openaitest.Reply {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == "user" && strings.Contains(last.Content, "关闭工单"):
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_ticket_close", `{}`)}}
	case last.Role == "user" && strings.HasPrefix(last.Content, "T-100"):
		return openaitest.Reply{Content: CardChosenPrefix + last.Content}
	case last.Role == "user" && strings.Contains(last.Content, "VPN"):
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_vpn_reset", `{}`)}}
	}
	return openaitest.Reply{Content: "好的。"}
}
