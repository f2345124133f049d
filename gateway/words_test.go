package gateway_test

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
)

// wordsYAML rewords one entry of each part of the catalogue that a chat
// user meets: the pipeline's, the agent's, the confirm words and the
// commands.
const wordsYAML = `
messages:
  empty: "（无答案）换个说法试试"
  confirmed: "搞定：%s"
  confirm_words: ["好的", "行"]
  reset_commands: ["/新会话"]
  reset: "好，重新开始。"
  agent:
    confirm: "要执行的话请回复“好的”：%s"
`

// TestConfiguredWordsReachTheUser follows each reworded entry to the chat:
// messages.empty on the normal path (the agent's own default used to win),
// an agent sentence, the words that confirm and the reset command.
func TestConfiguredWordsReachTheUser(t *testing.T) {
	t.Parallel()
	f := newConfirmFlowWith(t, wordsYAML)
	f.H.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Content, "随便") {
			return openaitest.Reply{} // no text, no tool call
		}
		return resetModel(req)
	})
	if got := f.Say(t, "zhangsan", "随便说点什么"); got != "（无答案）换个说法试试" {
		t.Fatalf("an empty model answer replied %q, want messages.empty", got)
	}
	ask := f.Say(t, "zhangsan", "帮我重置 VPN 密码")
	if !strings.HasPrefix(ask, "要执行的话请回复“好的”：") || resetCalls(f.H) != 0 {
		t.Fatalf("asked %q with %d resets; want messages.agent.confirm and nothing run", ask, resetCalls(f.H))
	}
	if done := f.Say(t, "zhangsan", "好的！"); resetCalls(f.H) != 1 || !strings.HasPrefix(done, "搞定：") {
		t.Fatalf("after 好的: %q with %d resets; want confirm_words to confirm and messages.confirmed", done, resetCalls(f.H))
	}
	// 确认 is no longer a confirm word: it is a message like any other.
	f.Say(t, "zhangsan", "帮我重置 VPN 密码")
	f.Say(t, "zhangsan", "确认")
	if n := resetCalls(f.H); n != 1 {
		t.Fatalf("确认 ran the reset (%d resets) although confirm_words replaced it", n)
	}
	if got := f.Say(t, "zhangsan", "/新会话"); got != "好，重新开始。" {
		t.Fatalf("/新会话 replied %q, want messages.reset", got)
	}
}
